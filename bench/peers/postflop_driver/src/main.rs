//! cfrjax's benchmark driver for postflop-solver: builds one spot from arguments, runs a
//! fixed number of its (DCFR, alternating) iterations on T threads, prints one JSON record.
//!
//!   cfrjax-postflop-driver --board "Ks Js Th 7d 2c" --pot 20 --stack 100 --bets "50%,100%" \
//!       --iterations 1000 --threads 1 [--eval-every K] [--target CHIPS] [--max-seconds S]
//!       [--range0 R --range1 R] [--dump-strategy PATH]
//!
//! With `--eval-every K` the record's `curve` holds `[iterations, solve_s, exploitability,
//! cpu_s]` after every K iterations: `solve_s` is the wall time of the iterations alone
//! (each `solve_step` timed, the evaluations between them not), `cpu_s` this process's CPU
//! time over the same stretches (all its threads). `--target` stops at the first checkpoint
//! whose exploitability is at most CHIPS, `--max-seconds` at the first whose `solve_s` is at
//! least S (both need `--eval-every`); `iterations` is then the number actually run.
//! `--range0`/`--range1`: postflop-solver range strings (e.g. single combos "AsKh,QdQc");
//! empty means every live combo.
//!
//! Ranges are full ("any": every live combo, weight 1); no rake unless `--rake-rate R
//! --rake-cap C` (its TreeConfig fields). Bet sizes are its own strings:
//! `--bets` / `--raises` for both players on every street (default: no raises), each
//! `--sizes-at STREET PLAYER BETS RAISES` (street flop/turn/river, player oop/ip) replacing one
//! cell, `--turn-donk` / `--river-donk` (default: none, i.e. OOP's bet sizes), and
//! `--add-allin-threshold` / `--force-allin-threshold` / `--merging-threshold` (default 0: off).
//! Units (its conventions):
//!   * `exploitability`: `compute_exploitability` = (BR value OOP + BR value IP) / 2 in chips,
//!     = NashConv / 2, cfrjax's `exploitability` (pot-independent: the bias cancels).
//!   * `current_ev`: `compute_current_ev` = each player's value of the average strategy with
//!     the bias (starting pot / 2) already subtracted: cfrjax's convention.
//!   * `expected_value_with_bias`: after `finalize`, the range-weighted mean of
//!     `expected_values(p)` at the root: includes the half pot each player put in; subtract
//!     pot / 2 (10 for pot 20) for cfrjax's convention.

use postflop_solver::*;
use std::io::Write;
use std::time::Instant;

fn arg(args: &[String], name: &str, default: &str) -> String {
    match args.iter().position(|a| a == name) {
        Some(i) => args.get(i + 1).cloned().unwrap_or_else(|| panic!("{name} needs a value")),
        None => default.to_string(),
    }
}

fn board_cards(s: &str) -> Vec<Card> {
    let t: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..t.len() / 2).map(|i| card_from_str(&t[2 * i..2 * i + 2]).unwrap()).collect()
}

fn action_label(a: &Action) -> String {
    match a {
        Action::Fold => "fold".into(),
        Action::Check => "check".into(),
        Action::Call => "call".into(),
        Action::Bet(x) => format!("bet {x}"),
        Action::Raise(x) => format!("raise {x}"),
        Action::AllIn(x) => format!("allin {x}"),
        Action::Chance(c) => format!("deal {}", card_to_string(*c).unwrap()),
        Action::None => "none".into(),
    }
}

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
}

/// CPU seconds of this process, all threads (CLOCK_PROCESS_CPUTIME_ID = 2 on Linux).
fn cpu_seconds() -> f64 {
    let mut ts = Timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { clock_gettime(2, &mut ts) };
    ts.tv_sec as f64 + 1e-9 * ts.tv_nsec as f64
}

fn json_str(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Every decision node's average strategy: one JSON line per node
/// {"history": [...labels], "player": p, "actions": [...], "strategy": [a * H + h]}.
fn dump(game: &mut PostFlopGame, hist: &mut Vec<String>, out: &mut impl Write) {
    if game.is_terminal_node() {
        return;
    }
    if game.is_chance_node() {
        let cards = game.possible_cards();
        for c in 0..52u8 {
            if cards & (1u64 << c) != 0 {
                let h = game.history().to_vec();
                game.play(c as usize);
                hist.push(format!("deal {}", card_to_string(c).unwrap()));
                dump(game, hist, out);
                hist.pop();
                game.apply_history(&h);
            }
        }
        return;
    }
    let actions = game.available_actions();
    let strat = game.strategy();
    let hs: Vec<String> = hist.iter().map(|s| json_str(s)).collect();
    let acts: Vec<String> = actions.iter().map(|a| json_str(&action_label(a))).collect();
    let st: Vec<String> = strat.iter().map(|x| format!("{x:e}")).collect();
    writeln!(out, "{{\"history\":[{}],\"player\":{},\"actions\":[{}],\"strategy\":[{}]}}",
             hs.join(","), game.current_player(), acts.join(","), st.join(",")).unwrap();
    for i in 0..actions.len() {
        let h = game.history().to_vec();
        game.play(i);
        hist.push(action_label(&actions[i]));
        dump(game, hist, out);
        hist.pop();
        game.apply_history(&h);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let board = board_cards(&arg(&args, "--board", "Ks Js Th 7d 2c"));
    let pot: i32 = arg(&args, "--pot", "20").parse().unwrap();
    let stack: i32 = arg(&args, "--stack", "100").parse().unwrap();
    let bets = arg(&args, "--bets", "50%,100%");
    let iterations: u32 = arg(&args, "--iterations", "1000").parse().unwrap();
    let threads: usize = arg(&args, "--threads", "1").parse().unwrap();
    let eval_every: u32 = arg(&args, "--eval-every", "0").parse().unwrap();
    let target: f32 = arg(&args, "--target", "0").parse().unwrap();
    let max_seconds: f64 = arg(&args, "--max-seconds", "0").parse().unwrap();
    let dump_path = arg(&args, "--dump-strategy", "");
    let range0 = arg(&args, "--range0", "");
    let range1 = arg(&args, "--range1", "");
    let rake_rate: f64 = arg(&args, "--rake-rate", "0").parse().unwrap();
    let rake_cap: f64 = arg(&args, "--rake-cap", "0").parse().unwrap();
    rayon::ThreadPoolBuilder::new().num_threads(threads).build_global().unwrap();

    let range = |s: &str| if s.is_empty() { Range::ones() } else { s.parse::<Range>().unwrap() };
    let (state, turn, river) = match board.len() {
        3 => (BoardState::Flop, NOT_DEALT, NOT_DEALT),
        4 => (BoardState::Turn, board[3], NOT_DEALT),
        5 => (BoardState::River, board[3], board[4]),
        n => panic!("board has {n} cards"),
    };
    let card_config = CardConfig {
        range: [range(&range0), range(&range1)],
        flop: [board[0], board[1], board[2]],
        turn,
        river,
    };
    let raises = arg(&args, "--raises", "");
    let sizes = BetSizeOptions::try_from((bets.as_str(), raises.as_str())).unwrap();
    let mut cell = [[sizes.clone(), sizes.clone()], [sizes.clone(), sizes.clone()], [sizes.clone(), sizes]];
    for (i, a) in args.iter().enumerate().filter(|(_, a)| *a == "--sizes-at") {
        let v = &args[i + 1..i + 5];
        let street = ["flop", "turn", "river"].iter().position(|s| *s == v[0]).unwrap_or_else(|| panic!("{a}: street {}", v[0]));
        let player = ["oop", "ip"].iter().position(|p| *p == v[1]).unwrap_or_else(|| panic!("{a}: player {}", v[1]));
        cell[street][player] = BetSizeOptions::try_from((v[2].as_str(), v[3].as_str())).unwrap();
    }
    let donk = |name: &str| match arg(&args, name, "none").as_str() {
        "none" => None,
        d => Some(DonkSizeOptions::try_from(d).unwrap()),
    };
    let threshold = |name: &str| arg(&args, name, "0").parse::<f64>().unwrap();
    let [flop_sizes, turn_sizes, river_sizes] = cell;
    let tree_config = TreeConfig {
        initial_state: state,
        starting_pot: pot,
        effective_stack: stack,
        rake_rate,
        rake_cap,
        flop_bet_sizes: flop_sizes,
        turn_bet_sizes: turn_sizes,
        river_bet_sizes: river_sizes,
        turn_donk_sizes: donk("--turn-donk"),
        river_donk_sizes: donk("--river-donk"),
        add_allin_threshold: threshold("--add-allin-threshold"),
        force_allin_threshold: threshold("--force-allin-threshold"),
        merging_threshold: threshold("--merging-threshold"),
    };
    let t0 = Instant::now();
    let tree = ActionTree::new(tree_config).unwrap();
    let mut game = PostFlopGame::with_config(card_config, tree).unwrap();
    game.allocate_memory(false);
    let build_s = t0.elapsed().as_secs_f64();
    let (mem, _) = game.memory_usage();

    let mut curve: Vec<String> = Vec::new();
    let mut solve_s = 0.0f64;
    let mut cpu_s = 0.0f64;
    let mut done = 0u32;
    for t in 0..iterations {
        let (t1, c1) = (Instant::now(), cpu_seconds());
        solve_step(&game, t);
        solve_s += t1.elapsed().as_secs_f64();
        cpu_s += cpu_seconds() - c1;
        done = t + 1;
        if eval_every > 0 && (t + 1) % eval_every == 0 {
            let e = compute_exploitability(&game);
            curve.push(format!("[{},{:.6},{:e},{:.6}]", t + 1, solve_s, e, cpu_s));
            if (target > 0.0 && e <= target) || (max_seconds > 0.0 && solve_s >= max_seconds) {
                break;
            }
        }
    }
    let t2 = Instant::now();
    let exploitability = compute_exploitability(&game);
    let eval_s = t2.elapsed().as_secs_f64();
    let current_ev = compute_current_ev(&game);
    let mes_ev = compute_mes_ev(&game);
    finalize(&mut game);
    game.back_to_root();
    game.cache_normalized_weights();
    let ev_bias = [0usize, 1].map(|p| compute_average(&game.expected_values(p), game.normalized_weights(p)));
    if !dump_path.is_empty() {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&dump_path).unwrap());
        let hands: Vec<String> = (0..2)
            .map(|p| holes_to_strings(game.private_cards(p)).unwrap().iter().map(|s| json_str(s)).collect::<Vec<_>>().join(","))
            .collect();
        writeln!(f, "{{\"hands\":[[{}],[{}]]}}", hands[0], hands[1]).unwrap();
        let mut hist = Vec::new();
        dump(&mut game, &mut hist, &mut f);
        game.back_to_root();
    }
    println!(
        "{{\"solver\":\"postflop-solver\",\"algorithm\":\"DCFR (its own: alpha 1.5, beta 0.5, gamma 3 reset at powers of 4), alternating\",\
\"precision\":\"float32\",\"threads\":{threads},\"iterations\":{done},\"build_s\":{build_s:.6},\
\"solve_s\":{solve_s:.6},\"cpu_s\":{cpu_s:.6},\"ms_per_iter\":{:.6},\"eval_s\":{eval_s:.6},\"memory_bytes\":{mem},\
\"num_hands\":[{},{}],\"exploitability\":{:e},\"mes_ev\":[{:e},{:e}],\"current_ev\":[{:e},{:e}],\
\"expected_value_with_bias\":[{:e},{:e}],\"curve\":[{}]}}",
        1e3 * solve_s / done.max(1) as f64,
        game.private_cards(0).len(), game.private_cards(1).len(),
        exploitability, mes_ev[0], mes_ev[1], current_ev[0], current_ev[1], ev_bias[0], ev_bias[1],
        curve.join(",")
    );
}
