"""Native HUNL flop/turn/river subgames: cards, hand evaluation, ranges, deals, tree building.

Also reachable as `cfrjax.poker`: what writing a spot in Python needs, e.g.

    spot = cfrjax.poker.PokerSubgameSpec(board="Ks Js Th 7d", pot=20, stack=110,
                                         range0="AA,KK,AKs", range1=cfrjax.poker.parse_range("QQ-TT,AQs"),
                                         betting={"bet": "50%, 100%", "raise": "2.5x"})
    game = cfrjax.load_game(spot)

with `parse_range` (range strings), `BetSizes.parse` / `parse_sizes` (bet-size strings),
`parse_board` / `parse_combo` / `COMBO_NAMES` (cards and the `[1326]` combo order),
`root_ranges` / `set_root_ranges` (re-targeting a compiled spot) and `load_poker_config`
(spec files).

Modules (data flows config -> builders; no cycles): `cards`, `evaluator`, `ranges`;
`betting` (bet-size strings per street and player, `BetSizes`);
`config` (`PokerSubgameSpec`); `deals` (deals, deal weights, `set_root_ranges`);
`subgame` (tabular form: `build_spec`); `libratus` and `toml` (spec files -> config);
`pot` (the starting pot, exploitability and targets in % of it);
`strategy_files` (`cfrjax.strategy.strategy_table`'s rows as CSV or JSON).

`build_spec(PokerSubgameSpec(...))` or `load_poker_toml("games/hunl_river.toml")`
give a validated `GameSpec`; `load_libratus_endgame` reads the released Libratus
endgames.
"""

from cfrjax.games.poker.cards import (
    CARD_NAMES, COMBO_INDEX, COMBO_NAMES, COMBOS, NUM_COMBOS, RANKS, SUITS, PokerSpecError, board_str, card_id,
    canonical_hand, canonical_key, card_str, combo_index, combo_str, combos_blocked_by, combos_conflict, parse_board, parse_cards, parse_combo)
from cfrjax.games.poker.evaluator import CATEGORY_NAMES, evaluate, hand_category, rank5, rank6, rank7
from cfrjax.games.poker.libratus import load_libratus_endgame, read_libratus_file
from cfrjax.games.poker.ranges import (
    parse_range, random_ranges, range_from_hands, resolve_range, token_mask, top_n, weights_from_array)
from cfrjax.games.poker.betting import BetSizes, parse_sizes
from cfrjax.games.poker.config import ALLIN, PokerSubgameSpec
from cfrjax.games.poker.pot import pct_of_pot, starting_pot
from cfrjax.games.poker.deals import (
    deal_probabilities, deals_from_support, root_deals, root_ranges, set_root_ranges, subgame_deals)
from cfrjax.games.poker.subgame import KEY_FIELDS, build_spec, count_paper_sizes
from cfrjax.games.poker.toml import config_from_dict, load_poker_config, load_poker_toml
from cfrjax.games.poker.strategy_files import (
    read_strategy_csv, read_strategy_json, write_strategy_csv, write_strategy_json)
from cfrjax.strategy import strategy_table   # the one table of every game, re-exported beside its files

__all__ = [
    "ALLIN", "BetSizes", "KEY_FIELDS", "CARD_NAMES", "CATEGORY_NAMES", "COMBO_INDEX", "COMBO_NAMES", "COMBOS", "NUM_COMBOS", "RANKS", "SUITS",
    "PokerSpecError", "PokerSubgameSpec", "board_str", "build_spec", "card_id", "card_str", "combo_index",
    "canonical_hand", "canonical_key", "combo_str", "combos_blocked_by", "combos_conflict", "config_from_dict", "count_paper_sizes", "deal_probabilities",
    "deals_from_support", "evaluate",
    "hand_category", "load_libratus_endgame", "load_poker_config", "load_poker_toml", "parse_board", "parse_cards",
    "parse_combo", "parse_range", "pct_of_pot", "parse_sizes", "random_ranges", "range_from_hands", "rank5", "rank6", "rank7",
    "read_libratus_file", "read_strategy_csv", "read_strategy_json", "resolve_range", "root_deals",
    "root_ranges", "set_root_ranges", "starting_pot", "strategy_table", "subgame_deals", "write_strategy_csv", "write_strategy_json", "token_mask", "top_n", "weights_from_array",
]
