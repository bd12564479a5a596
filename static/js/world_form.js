// Publish/edit form: live preview card and category-specific fields. No build step.
(function () {
  "use strict";
  const form = document.getElementById("world-form");
  if (!form) return;
  const $ = (id) => document.getElementById(id);
  const field = (name) => form.elements.namedItem(name);
  const extras = {
    stories: ["story_opening"],
    characters: ["character_name", "character_persona", "character_greeting", "character_examples"],
  };
  const allExtras = [
    "story_opening", "character_name", "character_persona", "character_greeting", "character_examples",
  ];
  let coverUrl = null;

  function category() {
    const el = field("category");
    return el ? el.value : "games";
  }

  function showExtras() {
    const wanted = extras[category()] || [];
    for (const name of allExtras) {
      const box = $("field-" + name);
      if (!box) continue;
      const hasError = box.classList.contains("field-error");
      box.hidden = !wanted.includes(name) && !hasError && !(field(name).value || "").trim();
    }
  }

  function text(el, value) {
    // textContent, never innerHTML: what the user types is shown as text.
    el.textContent = value;
  }

  function update() {
    const sel = field("category");
    text($("preview-title"), field("title").value.trim() || "Untitled world");
    text($("preview-category"), sel ? sel.options[sel.selectedIndex].text : "");
    $("preview-category").className = "pill pill-" + category();
    text($("preview-description"), field("description").value.trim());
    text($("preview-prompt"), field("prompt").value.trim());
    let extra = "";
    if (category() === "stories") extra = field("story_opening").value.trim();
    if (category() === "characters") {
      const name = field("character_name").value.trim();
      const greeting = field("character_greeting").value.trim();
      extra = name ? name + (greeting ? ": “" + greeting + "”" : "") : "";
    }
    text($("preview-extra"), extra);
    if (!coverUrl && $("preview-cover").src.includes("/covers/placeholder/")) {
      $("preview-cover").src = "/covers/placeholder/" + category() + "/preview.svg";
    }
    showExtras();
  }

  const cover = field("cover");
  if (cover) {
    cover.addEventListener("change", () => {
      const file = cover.files && cover.files[0];
      if (coverUrl) URL.revokeObjectURL(coverUrl);
      coverUrl = file ? URL.createObjectURL(file) : null;
      if (coverUrl) $("preview-cover").src = coverUrl;
    });
  }
  form.addEventListener("input", update);
  form.addEventListener("change", update);
  update();
})();
