// The join page: post the join (with the invite token from the link, and the display name of an
// anonymous visitor), then play; a full world, a dead link or a refused name is said in the page.
(() => {
  "use strict";

  const root = document.getElementById("join");
  const form = document.getElementById("join-form");
  if (!root || !form) return;
  const button = document.getElementById("join-button");
  const nameInput = document.getElementById("join-name");
  const nameError = document.getElementById("join-name-error");
  const formError = document.getElementById("join-error");

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function show(element, text) {
    if (!element) return;
    element.textContent = text || "";
    element.hidden = !text;
  }

  function message(status, data) {
    if (status === 409) return "This world is full: every seat is taken. Try again in a moment.";
    if (status === 404) return "This invite link is not valid any more: the session is private or has ended.";
    if (status === 403) return data.detail || "You cannot join this session.";
    const detail = data.detail || Object.values(data).flat().join(" ");
    return detail || `The server answered ${status}. Try again.`;
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    show(nameError, "");
    show(formError, "");
    const body = {};
    if (root.dataset.invite) body.invite = root.dataset.invite;
    const name = nameInput ? nameInput.value.trim() : "";
    if (name) body.name = name;
    button.disabled = true;
    try {
      const response = await fetch(root.dataset.api, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
        body: JSON.stringify(body),
      });
      const data = await response.json().catch(() => ({}));
      if (response.ok) {
        location.assign(root.dataset.play);
        return;
      }
      if (response.status === 400 && data.name) {
        show(nameError, [].concat(data.name).join(" "));
        if (nameInput) nameInput.focus();
      } else {
        show(formError, message(response.status, data));
      }
    } catch {
      show(formError, "Could not reach the server. Check your connection and try again.");
    }
    button.disabled = false;
  });
})();
