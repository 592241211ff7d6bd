"""The form contract (`cfrjax.forms.Game`, `cfrjax.forms.Passes`): both forms run through
the same calls, each result's shape checked against the game's `slot_shape`."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cfrjax
from cfrjax import forms, passes
from cfrjax.games.poker import PokerSubgameSpec
from cfrjax.games.poker.public_tree import build_public

GAMES = {"tabular": lambda: cfrjax.load_game("kuhn_poker"),
         "public": lambda: build_public(PokerSubgameSpec(board="Ks Js Th 7d 2c", random_hands=8, seed=3),
                                        hands="range")}


@pytest.mark.parametrize("form", sorted(GAMES))
def test_both_forms_through_the_interface(form):
    game = GAMES[form]()
    assert isinstance(game, forms.Game) and forms.form_name(game) == form
    module = forms.form_of(game)
    assert isinstance(module, forms.Passes)
    shape = tuple(game.slot_shape)
    S = game.num_slots
    assert shape[0] == S and len(shape) == (1 if form == "tabular" else 2)
    assert game.slot_split < S and game.num_infosets > 0 and isinstance(game.sizes(), dict)
    state = cfrjax.init(game, dtype="float32")
    assert state.regret.shape == shape
    sigma = passes.regret_matching(game, state.regret)                          # uniform: no regret yet
    assert sigma.shape == shape
    assert passes.extend(sigma).shape == (S + 1,) + shape[1:]
    ranges = [(p, passes.slot_range(game, p)) for p in (None, 0, 1)]

    def calls(s):   # every pass of the interface, in one program
        out = [module.regret_pass(game, passes.extend(s), jnp.zeros((hi - lo,) + shape[1:], s.dtype), p)[:2]
               for p, (lo, hi) in ranges]
        return out, module.best_response_values(game, s), module.expected_value(game, s), \
            module.expected_values(game, s)
    out, br, ev, values = jax.jit(calls)(sigma)
    for (_, (lo, hi)), (acc, y) in zip(ranges, out):
        assert acc.shape == y.shape == (hi - lo,) + shape[1:]
        assert np.all(np.asarray(y) >= 0) and np.any(np.asarray(acc) != 0)
    assert br.shape == (2,) and ev.shape == ()
    assert values.shape == (2,) and float(values[0]) == pytest.approx(-float(values[1]), abs=1e-5)   # zero-sum
    rows = module.strategy_rows(game, sigma)
    assert rows and {"infoset", "player", "action", "probability"} <= set(rows[0])
    key, player, names, index = next(iter(module.infosets(game)))
    assert player in (0, 1) and np.asarray(sigma)[index].shape == (len(names),)
    assert all(isinstance(v, int) and v >= 0 for v in module.scratch_elements(game, "alternating").values())
