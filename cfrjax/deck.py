"""The deck: its size and the card index meaning "no card" (a leaf module, no imports).

Cards are ints `0 .. NUM_CARDS - 1` (`cfrjax.games.poker.cards` names them); the public
form's card-removal tables (`cfrjax.public.terminals`) and the poker builders both read
the size from here, so the core never imports the poker package for it.
"""

#: Cards in the deck.
NUM_CARDS = 52
#: The card index of "no card" (one past the last card), e.g. a trunk node's `dealt`
#: where no card was dealt above it (`cfrjax.public.game.PublicGame.trunk_dealt`).
NO_CARD = NUM_CARDS
