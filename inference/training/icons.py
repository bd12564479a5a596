"""The labelled icons the open-vocabulary sprites and behaviours learn from (training only).

Three npm packages, installed into a folder of their own (nothing is fetched when serving):

    npm install --prefix var/icons-npm emoji-datasource-google@16.0.0 emojibase-data@17.0.0 \
        @iconify-json/game-icons@1.2.4

- `emoji-datasource-google`: Noto emoji PNGs (images Apache-2.0, package MIT) with categories;
  only concrete kinds are kept (animals, plants, food, places, vehicles, objects, fantasy
  beings), no flags, symbols, faces or hands, and none that `data/concrete_labels.json` labels
  a scene rather than a thing ("desert", "sunset": the world's place, sky and time).
- `emojibase-data`: names and tags of each emoji (MIT).
- `@iconify-json/game-icons`: named silhouettes (CC BY 3.0) for what emoji lack (a lighthouse,
  a windmill). A name is kept where `data/concrete_labels.json` (a judgement per name: a
  concrete thing or being a player would recognise, not "sprint", "soul" or "france") says
  so and no emoji already names the same thing. A landscape ("valley", "river", "forest") is a
  place a player is in, which the world model's biomes draw, not a thing beside them: it is
  labelled a scene, or a world named for its valley would put a valley beside the player.

`python -m inference.training.icons --npm var/icons-npm/node_modules` writes
`inference/weights/concepts.json` (the vocabulary the reader loads: names, aliases, behaviour
labels, the split) and `var/icons/images.npz` (16x16 RGBA, straight alpha; game icons carry an
alpha only). 10% of the concepts, chosen by a hash of the name, are never trained on
(`split: "unseen"`): their images and names only measure.
"""

from __future__ import annotations

import argparse
import io
import json
import zlib
from pathlib import Path

import numpy as np

from inference.world.concepts import BEHAVIOURS, CONCEPTS_PATH

SIZE = 16
UNSEEN_SHARE = 0.10
# a game icon this near an emoji's name is the same thing (the emoji, in colour, is kept)
SAME_AS_EMOJI = 0.85
# emoji (category, subcategory) kept: concrete things a world can show
KEEP = {
    "Animals & Nature": None,  # every subcategory
    "Food & Drink": None,
    "Travel & Places": {
        "place-map",
        "place-geographic",
        "place-building",
        "place-religious",
        "place-other",
        "transport-ground",
        "transport-water",
        "transport-air",
        "hotel",
    },  # not "sky & weather": rain, fog, sun and moon are the world's atmosphere and time
    "Objects": None,
    "Activities": None,
    "People & Body": {"person-fantasy", "person-role"},
    "Smileys & Emotion": {"face-costume"},
}

# behaviour labels by emoji subcategory: (motion, gives light); exceptions are in
# data/behaviour_labels.json, written by hand like any other label
SUBCATEGORY_BEHAVIOUR = {
    "animal-mammal": "wanders",
    "animal-bird": "flies",
    "animal-marine": "swims",
    "animal-bug": "wanders",
    "animal-reptile": "wanders",
    "animal-amphibian": "wanders",
    "plant-flower": "walkable",
    "plant-other": "walkable",
    "place-building": "blocks",
    "place-religious": "blocks",
    "place-other": "blocks",
    "place-geographic": "blocks",
    "place-map": "blocks",
    "hotel": "blocks",
    "transport-ground": "wanders",
    "transport-water": "swims",
    "transport-air": "flies",
    "person-fantasy": "wanders",
    "person-role": "wanders",
    "face-costume": "wanders",
}
LABELS = Path(__file__).parent / "data" / "behaviour_labels.json"
CONCRETE = Path(__file__).parent / "data" / "concrete_labels.json"
SCENE = "scene"  # a label of CONCRETE: a place, a sky or a time of day, not a thing


def emoji_concepts(npm: Path) -> list[dict]:
    """Concrete emoji: name, aliases, tags, image path and the behaviour their category says."""
    data = json.loads((npm / "emoji-datasource-google" / "emoji.json").read_text())
    base = {e["hexcode"]: e for e in json.loads((npm / "emojibase-data/en/data.json").read_text())}
    scenes = {k for k, v in json.loads(CONCRETE.read_text()).items() if v == SCENE}
    kept, names = [], set()
    for e in sorted(data, key=lambda e: e["sort_order"]):
        label = base.get(e["unified"]) or base.get(e["unified"].replace("-FE0F", ""))
        name = (label or {}).get("label") or e["name"].lower()
        name = name.replace("_", " ").strip()
        cat, sub = e["category"], e["subcategory"]
        keep = KEEP.get(cat, False)
        if keep is None or (keep and sub in keep):
            if not e.get("has_img_google") or name.split(" ")[0] in ("man", "woman"):
                continue  # gendered twins of a neutral emoji draw the same thing
            if name in names or name in scenes:
                continue
            names.add(name)
            tags = [t for t in (label or {}).get("tags", []) if t != name]
            aliases = sorted({n.replace("_", " ") for n in e["short_names"]} - {name})
            kept.append(
                {
                    "name": name,
                    "aliases": aliases,
                    "tags": tags,
                    "source": "emoji",
                    "group": sub,
                    "image": str(npm / "emoji-datasource-google/img/google/64" / e["image"]),
                    "motion": SUBCATEGORY_BEHAVIOUR.get(sub, "walkable"),
                }
            )
    return kept


def game_icon_concepts(npm: Path, emoji: list[dict]) -> list[dict]:
    """Game icons labelled a concrete, recognisable thing (`data/concrete_labels.json`, one
    judgement per name, written by hand like any label) that no emoji names already."""
    from inference.world import text as text_encoder

    icons = json.loads((npm / "@iconify-json/game-icons/icons.json").read_text())["icons"]
    concrete = json.loads(CONCRETE.read_text())
    names = [k for k in icons if concrete.get(k.replace("-", " ")) is True]
    spoken = [n.replace("-", " ") for n in names]
    emoji_names = text_encoder.embed([c["name"] for c in emoji])
    nearest = (text_encoder.embed(spoken) @ emoji_names.T).max(1)
    return [
        {
            "name": said,
            "aliases": [],
            "tags": [],
            "source": "game-icons",
            "group": "silhouette",
            "svg": icons[name]["body"],
            "motion": None,  # no category says: hand labels or the head's reading
        }
        for name, said, near in zip(names, spoken, nearest, strict=True)
        if near < SAME_AS_EMOJI
    ]


def rasterise(concept: dict) -> np.ndarray:
    """(16, 16, 4) uint8 straight-alpha image of a concept."""
    from PIL import Image

    if "image" in concept:
        img = Image.open(concept["image"]).convert("RGBA")
    else:
        import resvg_py

        svg = (
            '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 512 512">'
            + concept["svg"].replace("currentColor", "#000")
            + "</svg>"
        )
        png = bytes(resvg_py.svg_to_bytes(svg_string=svg))
        img = Image.open(io.BytesIO(png)).convert("RGBA")
    return np.asarray(img.resize((SIZE, SIZE), Image.Resampling.LANCZOS), dtype=np.uint8)


def split_of(name: str) -> str:
    """By a hash of the name: the same concepts stay unseen whatever else changes."""
    return "unseen" if zlib.crc32(name.encode()) % 1000 < UNSEEN_SHARE * 1000 else "train"


def apply_labels(concepts: list[dict]) -> None:
    """Hand labels where a category says too little: the dragon flies, a tree blocks."""
    labels = json.loads(LABELS.read_text())
    for c in concepts:
        got = labels.get(c["name"], {})
        c["motion"] = got.get("motion", c["motion"])
        c["light"] = bool(got.get("light", False))
        assert c["motion"] is None or c["motion"] in BEHAVIOURS, c


def build(npm: Path, out: Path) -> dict:
    emoji = emoji_concepts(npm)
    icons = game_icon_concepts(npm, emoji)
    concepts = emoji + icons
    apply_labels(concepts)
    images = np.stack([rasterise(c) for c in concepts])
    vocab = [
        {
            "name": c["name"],
            "aliases": c["aliases"],
            "tags": c["tags"],
            "source": c["source"],
            "group": c["group"],
            "motion": c["motion"],
            "light": c["light"],
            "split": split_of(c["name"]),
        }
        for c in concepts
    ]
    CONCEPTS_PATH.write_text(json.dumps({"concepts": vocab}, indent=0, ensure_ascii=False))
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / "images.npz", images=images, names=[c["name"] for c in concepts])
    return {
        "emoji": len(emoji),
        "game icons": len(icons),
        "unseen": sum(v["split"] == "unseen" for v in vocab),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--npm", type=Path, default=Path("var/icons-npm/node_modules"))
    parser.add_argument("--out", type=Path, default=Path("var/icons"))
    args = parser.parse_args()
    counts = build(args.npm, args.out)
    print("| source | concepts |\n| --- | --- |")
    for k, v in counts.items():
        print(f"| {k} | {v} |")


if __name__ == "__main__":
    main()
