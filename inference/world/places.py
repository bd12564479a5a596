"""Which biomes a world's description asks for: the prompt heads' distribution weighed with
what its phrases name (`phrases.read_phrases`), as the generator's condition."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from inference.world import spec

SHOWN_SHARE = 0.2  # a second biome of a mix is named (describe, names) from this share


class BiomePhrases(NamedTuple):
    """What a prompt's phrases say of each biome (`phrases.read_phrases`)."""

    nearest: np.ndarray  # cosine of the phrase nearest to one of its names
    claimed: np.ndarray  # the same among phrases nearest to it of all biomes (-1: none)
    lead: np.ndarray  # how much nearer to it such a phrase is than to the runner-up
    agreed: np.ndarray  # bool: phrases name it by both readings (`phrases.agreed_biomes`)
    apart: np.ndarray  # (biomes, biomes) bool: their claiming phrases share no word


def shown_biomes(biome_probs: np.ndarray) -> list[str]:
    """The biomes of a mix by name, the larger share first (the second from SHOWN_SHARE)."""
    top = np.argsort(-biome_probs)[:2]
    return [spec.BIOMES[b] for b in top if biome_probs[b] >= SHOWN_SHARE]


MIX_SHARES = (0.35, 0.65)  # the second biome's share in the generator's training mixes
# A second biome under this share of the top two is noise even when the "mixed" head says two
# (the heads alone, for weights without names).
MIX_MIN_SHARE = 0.1
# With phrase scores a biome's nearest phrase weighs this much against the heads'
# log-probability, so one place named among many details stands out; a second biome needs a
# phrase nearer to it than to any other biome, this close to one of its names, and this much of
# the heads' belief in the two.
PHRASE_WEIGHT = 20.0
SECOND_PHRASE_MIN = 0.7
SECOND_HEAD_MIN_SHARE = 0.05
# ... unless the "mixed" head is this sure of two and the second's phrase this close: the heads'
# share misses a second biome joined by words they never saw ("a sea of dunes bordering a grassy
# hillside" gave meadow 2%).
SECOND_SURE_MIXED = 0.8
SECOND_SURE_PHRASE = 0.74
# ... and that phrase has to be this much nearer to the second biome than to any other: a bare
# landform names no place ("hills with a" is 0.73 from the snow's "snow-covered hills" and 0.70
# from the meadow's "rolling green hills").
SECOND_LEAD_MIN = 0.08
# Where some phrase has one of a biome's names for its nearest biome name at this cosine or
# more, only such named biomes may be drawn: the heads read the place from an atmosphere or a
# detail named beside it ("camel tracks across the sand sea": a beach).
BIOME_CLAIM_MIN = 0.45
# A second biome is also drawn where a phrase names it plainly (its name the phrase's nearest at
# this cosine or more, with SECOND_LEAD_MIN over the runner-up) in words apart from the first
# biome's phrase (`BiomePhrases.apart`): the heads never met "snowy mountains" and gave "snowy
# mountains and a desert" the desert alone. Words shared keep one place: "a maple forest" is no
# forest beside the autumn of "maple forest". At 0.8 "an evergreen forest with sakura petals"
# had a blossom garden.
SECOND_PLAIN = 0.9


def biome_mix(
    probs: np.ndarray,
    mixed: float,
    phrase_scores: BiomePhrases | None = None,
) -> np.ndarray:
    """The prompt heads' biome distribution and probability of two biomes (and the phrase
    scores, when the weights have biome names) -> the generator's condition, as it was trained:
    one biome (one-hot), or the top two with the second's share of them kept within the
    training range. Where a phrase names some biome (`BIOME_CLAIM_MIN`), only named ones are
    drawn; a second biome needs a phrase that names it clearly and the heads' belief in two
    (`SECOND_*`), or phrases that both readings agree on (`AGREED_*`), or a phrase naming it
    plainly apart from the first's (`SECOND_PLAIN`)."""
    p = np.nan_to_num(np.asarray(probs, dtype=np.float64), nan=0.0)
    out = np.zeros(len(spec.BIOMES), np.float32)
    two = mixed > 0.5
    if phrase_scores is None:
        first, second = np.argsort(-p)[:2]
        share = p[second] / max(p[first] + p[second], 1e-12)
        two = two and share >= MIX_MIN_SHARE
    else:
        nearest, claimed, lead = (
            np.nan_to_num(np.asarray(x, np.float64), nan=-1.0)
            for x in (phrase_scores.nearest, phrase_scores.claimed, phrase_scores.lead)
        )
        agreed = np.asarray(phrase_scores.agreed, bool)
        apart = np.asarray(phrase_scores.apart, bool)
        rank = np.log(p + 1e-6) + PHRASE_WEIGHT * nearest
        named = claimed >= BIOME_CLAIM_MIN
        if named.any():  # some biome is named: the others are ruled out
            rank = np.where(named, rank, -np.inf)
        first, second = np.argsort(-rank)[:2]
        share = p[second] / max(p[first] + p[second], 1e-12)
        sure = mixed >= SECOND_SURE_MIXED and claimed[second] >= SECOND_SURE_PHRASE
        two = (
            two
            and claimed[second] >= SECOND_PHRASE_MIN
            and lead[second] >= SECOND_LEAD_MIN
            and (share >= SECOND_HEAD_MIN_SHARE or sure)
        )
        others = [b for b in np.flatnonzero(agreed) if b != first]
        plain = (claimed >= SECOND_PLAIN) & (lead >= SECOND_LEAD_MIN) & apart[first]
        others = others or [b for b in np.flatnonzero(plain) if b != first]
        if not two and others:  # whatever the heads make of the whole text (`AGREED_*`, …)
            second = max(others, key=lambda b: p[b])
            share, two = p[second] / max(p[first] + p[second], 1e-12), True
    if two:
        share = float(np.clip(share, *MIX_SHARES))
        out[first], out[second] = 1 - share, share
    else:
        out[first] = 1.0
    return out
