"""Names that look alike: "οwner" with a Greek omicron, "оwner" with a Cyrillic o, "ＯＷＮＥＲ" in
full width, "0wner" and "Owner" all read as "owner" on a page, so an account so named could pass
for another. ``skeleton`` maps a name to one form per look, and sign-up refuses a username, or a
display name, whose skeleton is another account's username's.

The look-alikes of a non-ASCII character come from Unicode's confusables (UTS #39), as the
``confusable_homoglyphs`` package ships them; only direct ones count: taken transitively they
chain "r" to "t" to "z".
"""

from __future__ import annotations

import json
import unicodedata
from functools import lru_cache
from importlib import resources

# ASCII characters that read as one another in the fonts pages use, folded before case is.
ASCII_FOLD = {"0": "o", "O": "o", "1": "l", "I": "l", "|": "l"}


@lru_cache(maxsize=1)
def _table() -> dict[str, str]:
    """A non-ASCII character -> the ASCII letter or digit it reads as (where it reads as one)."""
    text = resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text()
    out = {}
    for char, alikes in json.loads(text).items():
        ascii_ = sorted(a["c"] for a in alikes if a["c"].isascii() and a["c"].isalnum())
        if not char.isascii() and ascii_ and len(ascii_[0]) == 1:  # "rn" for "m" is two
            out[char] = ascii_[0]
    return out


def skeleton(name: str) -> str:
    """One form for every name that reads the same: compatibility forms folded (NFKC), each
    confusable character as the ASCII one it reads as, case folded, accents dropped."""
    table = _table()
    chars = (table.get(c, c) for c in unicodedata.normalize("NFKC", name))
    text = "".join(ASCII_FOLD.get(c, c) for c in chars).casefold()
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
