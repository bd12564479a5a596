// Sessions being played right now, as cards from GET /api/live/: on the Live page (every page,
// "More" for the next) and in the home page's Live row (the first `data-limit`, hidden while
// nothing runs). Each card's thumbnail is the session's latest frame, fetched again every few
// seconds; the list itself (players, viewers, joinable) is fetched again a little less often.
(() => {
  "use strict";

  const THUMB_MS = 4000;
  const LIST_MS = 10000;
  const CATEGORIES = { games: "Games", stories: "Stories", characters: "Characters", live: "Live" };

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function plural(n, word) {
    return `${n} ${word}${n === 1 ? "" : "s"}`;
  }

  // One card; update(card, item) fills in what changes.
  function makeCard(item) {
    const card = el("article", "card live-card");
    card.dataset.session = item.id;
    const thumb = el("a", "live-thumb");
    const img = el("img", "card-cover live-frame");
    img.alt = "";
    img.width = 320;
    img.height = 180;
    img.hidden = true; // until the first frame is there (the thumbnail is a 404 before it)
    const waiting = el("span", "live-waiting", "Starting…");
    const badge = el("span", "live-badge", "Live");
    thumb.append(img, waiting, badge);
    const body = el("div", "card-body");
    const title = el("h3", "card-title");
    title.append(el("a", "live-title"));
    const meta = el("p", "card-meta");
    meta.append(el("span", "pill live-category"));
    const stats = el("p", "card-stats");
    stats.append(el("span", "live-players"), el("span", "live-viewers"));
    const actions = el("p", "live-actions");
    const join = el("a", "btn btn-primary btn-small live-join", "Join");
    const watch = el("a", "btn btn-small live-watch", "Watch");
    actions.append(join, watch);
    body.append(title, meta, stats, actions);
    card.append(thumb, body);
    return card;
  }

  function update(card, item) {
    const world = item.world || {};
    const title = card.querySelector(".live-title");
    title.textContent = world.title || "A world";
    title.href = item.watch_url;
    card.querySelector(".live-thumb").href = item.watch_url;
    card.querySelector(".live-thumb").setAttribute("aria-label", `Watch ${world.title || "this world"}`);
    const pill = card.querySelector(".live-category");
    pill.textContent = CATEGORIES[world.category] || world.category || "";
    pill.className = `pill live-category pill-${world.category}`;
    card.querySelector(".live-players").textContent = `${item.players}/${item.max_players} playing`;
    card.querySelector(".live-viewers").textContent = plural(item.viewers || 0, "viewer");
    const join = card.querySelector(".live-join");
    join.hidden = !item.joinable || !item.join_url;
    if (item.join_url) join.href = item.join_url;
    card.querySelector(".live-watch").href = item.watch_url;
    card.dataset.thumbnail = item.thumbnail_url || "";
    card.dataset.players = String(item.players);
  }

  // The latest frame, loaded off-screen first so a 404 or a slow frame never blanks the card.
  function refreshThumb(card) {
    const url = card.dataset.thumbnail;
    if (!url) return;
    const next = new Image();
    next.onload = () => {
      const img = card.querySelector(".live-frame");
      img.src = next.src;
      img.hidden = false;
      card.querySelector(".live-waiting").hidden = true;
      card.dataset.thumbLoads = String(Number(card.dataset.thumbLoads || 0) + 1);
    };
    next.src = `${url}${url.includes("?") ? "&" : "?"}t=${Date.now()}`;
  }

  function attach(root) {
    const api = root.dataset.liveApi;
    const limit = Number(root.dataset.limit || 0); // 0: every page, with "More"
    const list = root.querySelector(".live-cards");
    const empty = root.querySelector(".live-empty");
    const more = root.querySelector(".live-more");
    const failed = root.querySelector(".live-error");
    const cards = new Map(); // session id -> card
    let pages = 1;
    let next = null;

    async function fetchPage(page) {
      const response = await fetch(`${api}?page=${page}`, { credentials: "same-origin" });
      if (response.status === 404 && page > 1) return { results: [], next: null }; // list shrank
      if (!response.ok) throw new Error(`The server answered ${response.status}.`);
      return response.json();
    }

    function render(items) {
      const shown = limit ? items.slice(0, limit) : items;
      const keep = new Set(shown.map((item) => item.id));
      for (const [id, card] of cards) {
        if (!keep.has(id)) {
          card.remove();
          cards.delete(id);
        }
      }
      shown.forEach((item) => {
        let card = cards.get(item.id);
        const fresh = !card;
        if (fresh) {
          card = makeCard(item);
          cards.set(item.id, card);
        }
        update(card, item);
        list.append(card); // busiest first: appending in order reorders the cards
        if (fresh) refreshThumb(card);
      });
      root.dataset.count = String(shown.length);
      root.dataset.loaded = "true";
      if (empty) empty.hidden = shown.length > 0;
      if (root.dataset.hideEmpty === "true") root.hidden = shown.length === 0;
      if (more) more.hidden = Boolean(limit) || !next;
    }

    async function load() {
      try {
        const items = [];
        for (let page = 1; page <= pages; page += 1) {
          const data = await fetchPage(page);
          items.push(...(data.results || []));
          next = data.next;
          if (!next) break;
        }
        if (failed) failed.hidden = true;
        render(items);
      } catch (err) {
        if (failed) {
          failed.textContent = `The live list could not be loaded: ${err.message}`;
          failed.hidden = false;
        }
      }
    }

    if (more) {
      more.addEventListener("click", () => {
        pages += 1;
        load();
      });
    }
    load();
    setInterval(() => { if (!document.hidden) load(); }, LIST_MS);
    setInterval(() => { if (!document.hidden) cards.forEach(refreshThumb); }, THUMB_MS);
  }

  document.querySelectorAll("[data-live-api]").forEach(attach);
})();
