"""What a text asks of a world: a description's place, sky, time of day, creature and things,
or an event's change, as the reader reads it (`reading.Reader`: the own head for the model's
own vocabulary, the concept head for the open one). No rules here: each field is what a span
names, else the default (a description's place: the prompt heads' biome over the whole text)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from inference.world import processes, spec
from inference.world import text as text_encoder
from inference.world.model import WorldModel
from inference.world.reading import Match, Reader

SUGGESTIONS = 4  # events offered for text the model cannot do, from these (kind, phrasing)
PLAIN_EVENTS = [(kind, p) for kind, by in spec.EVENT_PHRASES.items() for p in by.values()]
CLEAR, DAY = spec.WEATHERS.index("clear"), spec.TIMES.index("day")
MIX_SHARES = (0.35, 0.65)  # the second biome's share in the generator's training mixes


class PromptError(ValueError):
    """Empty, too long (> 500 chars) or unusable text."""


class UnsupportedEvent(PromptError):
    """Text naming nothing this model can do: ``unsupported``, not moderation's ``rejected``;
    ``suggest``: events it can do, nearest in meaning first."""

    def __init__(self, message: str, suggest: tuple[str, ...] = ()):
        super().__init__(message)
        self.suggest = suggest


def check_text(text: str) -> str:
    """A prompt or event text, whitespace folded; PromptError when empty or too long."""
    if not isinstance(text, str) or not text.strip():
        raise PromptError("text is empty")
    if len(text) > spec.MAX_PROMPT_CHARS:
        raise PromptError(f"text is longer than {spec.MAX_PROMPT_CHARS} characters")
    return " ".join(text.split())


@dataclass
class PromptReading:
    """What a world's description asks for (`WorldEngine.read_prompt`)."""

    text: str
    biome_probs: np.ndarray  # (BIOMES,): one biome, or two mixed
    weather: int
    time: int  # index in TIMES
    creature: int  # -1: none
    text_emb: np.ndarray  # the MiniLM embedding the generator is conditioned on
    lacks: str | None = None  # kept for readings stored before the open vocabulary: None now
    objects: tuple[Match, ...] = ()  # open-vocabulary things it names, placed near the spawn

    def names(self) -> dict:
        """The reading as people say it (the world page, the API): the place (one, or two
        mixed), the sky, the time of day, the creature (None) and what it lacks (None)."""
        return {
            "places": [spec.shown("biome", name) for name in shown_biomes(self.biome_probs)],
            "sky": spec.shown("weather", spec.WEATHERS[self.weather]),
            "time": spec.TIMES[self.time],
            "creature": spec.shown("creature", spec.CREATURES[self.creature])
            if self.creature >= 0
            else None,
            "things": [m.concept.name for m in self.objects],
            "lacks": self.lacks,
        }


def text_heads(
    model: WorldModel, text: str, heads, emb=None, device: torch.device | str = "cpu"
) -> dict[str, torch.Tensor]:
    """One text through a set of text heads (`WorldModel.prompt_heads`, `.event_heads`)."""
    if emb is None:
        emb = text_encoder.embed([text])[0]
    with torch.no_grad():
        out = heads(torch.from_numpy(emb[None]).to(device))
    return {k: torch.nan_to_num(v[0].float()).cpu() for k, v in out.items()}


def new_things(reader: Reader, text: str, also: tuple[str, ...] = ()) -> list[Match]:
    """The open-vocabulary things a text names, read beside the model's own creatures and
    things (and `also`: the processes it starts): words that name one of those are the
    model's ("a fox appears" is the fox it has, not a second one) and place nothing new."""
    return reader.things(text, known=(*spec.DRAWN_NAMES, *also))


def shown_biomes(biome_probs: np.ndarray) -> list[str]:
    """The biomes of a mix by name (one, or two), the larger share first."""
    top = np.argsort(-biome_probs)[:2]
    return [spec.BIOMES[b] for b in top if biome_probs[b] > 0]


def biome_mix(named: list[int], head: np.ndarray, mixed: float, chance: np.ndarray) -> np.ndarray:
    """The generator's condition, as it was trained: the biome the surest span names (none
    named: the prompt heads' own), and a second one a span names where both readings hold two
    likelier than one: the "mixed" head's chance of two times that span's `chance`, against
    the rest (an adjective read as a place is no second place, nor a mix the head reads into
    a text that names one place). The second's share comes from the heads' belief, within
    `MIX_SHARES`."""
    out = np.zeros(len(spec.BIOMES), np.float32)
    a = named[0] if named else int(np.argmax(head))
    b = named[1] if len(named) > 1 else -1
    if b >= 0 and mixed * chance[b] > (1.0 - mixed) * (1.0 - chance[b]):
        share = float(np.clip(head[b] / max(head[a] + head[b], 1e-12), *MIX_SHARES))
        out[a], out[b] = 1.0 - share, share
    else:
        out[a] = 1.0
    return out


def read_prompt(
    prompt: str, *, model: WorldModel, reader: Reader, device: torch.device | str = "cpu"
) -> PromptReading:
    """What a world's description asks for (no world is made); PromptError on bad text."""
    prompt = check_text(prompt)
    emb = text_encoder.embed([prompt])[0]
    heads = text_heads(model, prompt, model.prompt_heads, emb, device)
    named, chance = reader.own(prompt), reader.own_chances(prompt)
    return PromptReading(
        text=prompt,
        biome_probs=biome_mix(
            named["biome"],
            torch.softmax(heads["biome"], -1).numpy(),
            float(torch.softmax(heads["mixed"], -1)[1]),
            chance["biome"],
        ),
        weather=(named["weather"] or [CLEAR])[0],
        time=(named["time"] or [DAY])[0],
        creature=(named["creature"] or [-1])[0],
        text_emb=emb.astype(np.float32),
        objects=tuple(new_things(reader, prompt)),
    )


def read_event(
    text: str, *, model: WorldModel, reader: Reader, device: torch.device | str = "cpu"
) -> dict:
    """What an event text asks for: weather, time, creature, thing and process (an index
    into spec.PROCESSES: "a fire starts in the forest"), each an index or -1 (no change), and
    ``objects``: the open-vocabulary things it names (`Match`es); UnsupportedEvent when it is
    nothing the model can do."""
    folded = check_text(text)
    emb = text_encoder.embed([folded])[0]  # one embedding for the reader and the process head
    named = reader.own(folded)
    choice = {kind: (named[kind] or [-1])[0] for kind in ("weather", "time", "creature", "thing")}
    choice["process"] = processes.read(folded, emb)
    # a process read is the model's own, by its name and its plain phrasing; the things a
    # process text names are what it acts on (what burns is no new thing)
    name = spec.PROCESSES[choice["process"]] if choice["process"] >= 0 else None
    started = (name, spec.EVENT_PHRASES["process"][name]) if name else ()
    if started:
        choice["thing"] = -1
    choice["objects"] = new_things(reader, folded, also=started)
    if all(v < 0 for k, v in choice.items() if k != "objects") and not choice["objects"]:
        raise UnsupportedEvent(
            "no world event recognised in the text", suggest=nearest_events(folded)
        )
    return choice


def nearest_events(text: str, n: int = SUGGESTIONS) -> tuple[str, ...]:
    """The plain phrasings of the `n` events nearest in meaning to a text, at most two of a
    kind: "a horse gallops by" is offered a deer first, not a thunderstorm."""
    sims = text_encoder.embed([text, *(p for _, p in PLAIN_EVENTS)])
    out, per_kind = [], dict.fromkeys(spec.EVENT_PHRASES, 0)
    for i in np.argsort(-(sims[1:] @ sims[0])):
        kind, phrase = PLAIN_EVENTS[i]
        if per_kind[kind] < 2:
            out.append(phrase)
            per_kind[kind] += 1
        if len(out) == n:
            break
    return tuple(out)
