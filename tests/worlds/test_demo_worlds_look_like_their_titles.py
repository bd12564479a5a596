"""Every demo world looks like its title: its cover (one frame the world model renders at
spawn) is judged by the evaluation's frame classifier, trained on simulator frames only."""

import io

import numpy as np
import pytest
import torch
from PIL import Image

from inference.world import spec
from inference.world.decoder import out_side
from inference.world.engine import WEIGHTS_DIR
from inference.world.model import load_classifier
from worlds.cover_render import SCALE, render_cover_png
from worlds.management.commands.load_demo import DEMO_WORLDS

# What each title promises: the biomes its frame may show (the first is the prompt's main one).
LOOKS = {
    "Pine Valley Run": {"snow", "forest"},
    "Dune Sprinter": {"desert"},
    "Lava Steps": {"volcanic"},
    "Reef Diver": {"reef"},
    "The Lantern Keeper": {"city", "beach"},
    "The Last Caravan": {"desert", "meadow", "canyon"},
    "Winter Court": {"snow", "ruins", "city"},
    "Roots Below": {"cave"},
    "Mira the Cartographer": {"meadow", "blossom"},
    "Old Tom of the Marsh": {"swamp"},
    "Captain Sol": {"city", "beach"},
    "Ember the Fox Spirit": {"autumn"},
    "Meadow Commons": {"meadow", "blossom"},
    "Night Market Plaza": {"city"},
    "Glacier Camp": {"ice_cave", "snow"},
    "Sunflower Farm": {"meadow", "autumn"},
}


@pytest.fixture(scope="module")
def classifier():
    return load_classifier(WEIGHTS_DIR / "classifier.safetensors")


def test_every_demo_world_has_a_look():
    assert {title for title, *_ in DEMO_WORLDS} == set(LOOKS)


# A miss of the text reader (issue 46): "hills" of Mira's "green rolling hills" reads as the
# snowfield's, and the "mixed" head takes a second biome, so her meadow has snowfields.
# (Pine Valley Run's snowy valley, a miss of the judge until the reader read it as snowfield
# and forest, passes now.)
MISSES = {
    "Mira the Cartographer": "the reader adds a snowfield to her meadow: 'hills' reads as snow"
}


@pytest.mark.parametrize(
    ("title", "prompt", "seed"),
    [
        pytest.param(
            w[0],
            w[2],
            1000 + i,
            marks=[pytest.mark.xfail(strict=True, reason=MISSES[w[0]])] if w[0] in MISSES else [],
        )
        for i, w in enumerate(DEMO_WORLDS)
    ],
)
def test_the_cover_shows_the_biome_the_title_promises(classifier, title, prompt, seed):
    png = render_cover_png(prompt=prompt, seed=seed)  # the demo world's own seed (load_demo)
    image = Image.open(io.BytesIO(png))
    side = out_side() * SCALE
    assert image.size == (side, side)
    frame = np.asarray(image.convert("RGB"))[::SCALE, ::SCALE]  # the frame the model rendered
    with torch.no_grad():
        logits = classifier(torch.from_numpy(frame.copy()).float().div(255).permute(2, 0, 1)[None])
    seen = spec.BIOMES[int(logits["biome"][0].argmax())]
    assert seen in LOOKS[title], f"{title!r} looks like {seen}"
