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
//! empty means every live combo. `--compress`: its 16-bit storage (`allocate_memory(true)`).
//! `--ranges-file PATH`: a batch, one spot per line (`RANGE0<TAB>RANGE1`, the same tree and
//! board), solved one after the other in this process (each built, allocated and solved to
//! `--target` or `--iterations`); the record then gives per spot `[iterations, solve_s,
//! exploitability, wall_s]` and the batch's wall and spots per second.
//!
//! `--iterations 0`: the tree alone (decision nodes, hands, `memory_usage()`), nothing allocated.
//!
//! Every record also gives `memory_usage()` in both modes (`memory_bytes_32bit`,
//! `memory_bytes_16bit`; `memory_bytes` is the mode allocated), `decision_nodes`: the decision
//! nodes per street from the spot's first (the action tree's, each turn / river node counted
//! once per card that can be dealt there, as if no suit isomorphism merged them: cfrjax's
//! public tree), and `wall_s`: from the start of `main` to the end of the last iteration
//! (tree, allocation, iterations and the evaluations between them), and `peak_rss_bytes`: the
//! process's peak resident memory (VmHWM of /proc/self/status; 0 where there is none).
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

/// The process's peak resident memory in bytes (VmHWM), 0 where /proc/self/status lacks it.
fn peak_rss_bytes() -> u64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    text.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
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

/// Decision nodes per street below the current action-tree node (`street` = its street from
/// the spot's first), each counted once (`count_decisions` multiplies by the deals).
fn walk_decisions(tree: &mut ActionTree, street: usize, out: &mut [u64; 3]) {
    if tree.is_terminal_node() {
        return;
    }
    out[street] += 1;
    let actions = tree.available_actions().to_vec();
    for a in actions {
        tree.play(a).unwrap();
        if !tree.is_terminal_node() {
            walk_decisions(tree, if tree.is_chance_node() { street + 1 } else { street }, out);
        }
        tree.undo().unwrap();
    }
}

/// Decision nodes per street of the whole game (board of `board_len` cards): the action
/// tree's times the number of deals reaching that street (turn: 52 - board cards; river:
/// that times the cards left after the turn).
fn count_decisions(tree: &mut ActionTree, board_len: usize) -> Vec<u64> {
    let mut per = [0u64; 3];
    tree.back_to_root();
    walk_decisions(tree, 0, &mut per);
    tree.back_to_root();
    let streets = 6 - board_len;  // flop 3, turn 2, river 1
    let mut mult = 1u64;
    (0..streets).map(|k| {
        if k > 0 {
            mult *= (52 - board_len - (k - 1)) as u64;
        }
        per[k] * mult
    }).collect()
}

fn main() {
    let t_start = Instant::now();
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
    let compress = args.iter().any(|a| a == "--compress");
    let ranges_file = arg(&args, "--ranges-file", "");
    rayon::ThreadPoolBuilder::new().num_threads(threads).build_global().unwrap();

    let range = |s: &str| if s.is_empty() { Range::ones() } else { s.parse::<Range>().unwrap() };
    let (state, turn, river) = match board.len() {
        3 => (BoardState::Flop, NOT_DEALT, NOT_DEALT),
        4 => (BoardState::Turn, board[3], NOT_DEALT),
        5 => (BoardState::River, board[3], board[4]),
        n => panic!("board has {n} cards"),
    };
    let card_config = |r0: &str, r1: &str| CardConfig {
        range: [range(r0), range(r1)],
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
    if !ranges_file.is_empty() {
        return batch(&ranges_file, &card_config, &tree_config, iterations, eval_every, target, threads, compress, t_start);
    }
    let t0 = Instant::now();
    let mut tree = ActionTree::new(tree_config).unwrap();
    let decision_nodes = count_decisions(&mut tree, board.len());
    let mut game = PostFlopGame::with_config(card_config(&range0, &range1), tree).unwrap();
    if iterations == 0 {
        // the tree alone: sizes and the memory it would take, nothing allocated or solved
        let (mem32, mem16) = game.memory_usage();
        println!(
            "{{\"solver\":\"postflop-solver\",\"mode\":\"tree only (nothing allocated)\",\"build_s\":{:.6},\
\"memory_bytes_32bit\":{mem32},\"memory_bytes_16bit\":{mem16},\"decision_nodes\":[{}],\"num_hands\":[{},{}],\
\"peak_rss_bytes\":{}}}",
            t0.elapsed().as_secs_f64(), decision_nodes.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","),
            game.private_cards(0).len(), game.private_cards(1).len(), peak_rss_bytes()
        );
        return;
    }
    game.allocate_memory(compress);
    let build_s = t0.elapsed().as_secs_f64();
    let (mem32, mem16) = game.memory_usage();
    let mem = if compress { mem16 } else { mem32 };

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
    let wall_s = t_start.elapsed().as_secs_f64();
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
\"precision\":\"{}\",\"threads\":{threads},\"iterations\":{done},\"build_s\":{build_s:.6},\
\"solve_s\":{solve_s:.6},\"cpu_s\":{cpu_s:.6},\"ms_per_iter\":{:.6},\"eval_s\":{eval_s:.6},\"wall_s\":{wall_s:.6},\
\"memory_bytes\":{mem},\"memory_bytes_32bit\":{mem32},\"memory_bytes_16bit\":{mem16},\"decision_nodes\":[{}],\
\"peak_rss_bytes\":{},\
\"num_hands\":[{},{}],\"exploitability\":{:e},\"mes_ev\":[{:e},{:e}],\"current_ev\":[{:e},{:e}],\
\"expected_value_with_bias\":[{:e},{:e}],\"curve\":[{}]}}",
        if compress { "16-bit (compressed storage)" } else { "float32" },
        1e3 * solve_s / done.max(1) as f64,
        decision_nodes.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","),
        peak_rss_bytes(),
        game.private_cards(0).len(), game.private_cards(1).len(),
        exploitability, mes_ev[0], mes_ev[1], current_ev[0], current_ev[1], ev_bias[0], ev_bias[1],
        curve.join(",")
    );
}

/// `--ranges-file`: every line's spot built, allocated and solved one after the other.
#[allow(clippy::too_many_arguments)]
fn batch(path: &str, card_config: &dyn Fn(&str, &str) -> CardConfig, tree_config: &TreeConfig, iterations: u32,
         eval_every: u32, target: f32, threads: usize, compress: bool, t_start: Instant) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let t0 = Instant::now();
    let mut rows: Vec<String> = Vec::new();
    let (mut total_iters, mut reached) = (0u64, 0usize);
    let mut decision_nodes = Vec::new();
    let (mut mem32, mut mem16) = (0u64, 0u64);
    for line in &lines {
        let (r0, r1) = line.split_once('\t').unwrap_or_else(|| panic!("{path}: a line without a tab"));
        let t1 = Instant::now();
        let mut tree = ActionTree::new(tree_config.clone()).unwrap();
        if decision_nodes.is_empty() {
            decision_nodes = count_decisions(&mut tree, 6 - tree_config_streets(tree_config));
        }
        let mut game = PostFlopGame::with_config(card_config(r0, r1), tree).unwrap();
        game.allocate_memory(compress);
        (mem32, mem16) = game.memory_usage();
        let mut solve_s = 0.0f64;
        let mut done = 0u32;
        let mut e = f32::INFINITY;
        for t in 0..iterations {
            let t2 = Instant::now();
            solve_step(&game, t);
            solve_s += t2.elapsed().as_secs_f64();
            done = t + 1;
            if eval_every > 0 && (t + 1) % eval_every == 0 {
                e = compute_exploitability(&game);
                if target > 0.0 && e <= target {
                    break;
                }
            }
        }
        if eval_every == 0 || done % eval_every != 0 {
            e = compute_exploitability(&game);
        }
        reached += (target > 0.0 && e <= target) as usize;
        total_iters += done as u64;
        rows.push(format!("[{done},{solve_s:.6},{e:e},{:.6}]", t1.elapsed().as_secs_f64()));
    }
    let wall_s = t0.elapsed().as_secs_f64();
    println!(
        "{{\"solver\":\"postflop-solver\",\"mode\":\"batch, one spot after the other\",\"precision\":\"{}\",\
\"threads\":{threads},\"spots\":{},\"iterations_total\":{total_iters},\"target\":{target:e},\"reached\":{reached},\
\"wall_s\":{wall_s:.6},\"process_wall_s\":{:.6},\"spots_per_s\":{:.6},\"memory_bytes_32bit\":{mem32},\
\"memory_bytes_16bit\":{mem16},\"peak_rss_bytes\":{},\"decision_nodes\":[{}],\"per_spot\":[{}]}}",
        if compress { "16-bit (compressed storage)" } else { "float32" },
        lines.len(), t_start.elapsed().as_secs_f64(), lines.len() as f64 / wall_s, peak_rss_bytes(),
        decision_nodes.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","), rows.join(",")
    );
}

/// The number of streets a tree of this initial state plays (flop 3, turn 2, river 1).
fn tree_config_streets(c: &TreeConfig) -> usize {
    match c.initial_state {
        BoardState::Flop => 3,
        BoardState::Turn => 2,
        BoardState::River => 1,
    }
}
