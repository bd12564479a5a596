// Held keys for protocol v1 "input": the keyboard whenever the page has focus and no text box
// is being typed in, and the on-screen d-pad on touch screens (pointer events).
// `ParallaxControls.attach({pad, onChange})` calls onChange(keys) with the held set on every
// change and returns {held, isTouch}.
(() => {
  "use strict";

  const KEYMAP = {
    w: "w", a: "a", s: "s", d: "d", " ": "space",
    arrowup: "w", arrowleft: "a", arrowdown: "s", arrowright: "d",
  };

  function typing(target) {
    return Boolean(target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA"
      || target.tagName === "SELECT" || target.isContentEditable));
  }

  function modified(event) {
    return event.ctrlKey || event.metaKey || event.altKey;
  }

  function isTouchScreen() {
    return window.matchMedia("(pointer: coarse)").matches || navigator.maxTouchPoints > 0;
  }

  function attach({ pad, onChange }) {
    const held = new Set();

    function press(key) {
      if (held.has(key)) return;
      held.add(key);
      onChange([...held]);
    }

    function release(key) {
      if (held.delete(key)) onChange([...held]);
    }

    window.addEventListener("keydown", (event) => {
      if (typing(event.target)) {
        // Escape leaves the text box, so the next keys move the avatar again.
        if (event.key === "Escape") event.target.blur();
        return;
      }
      const key = KEYMAP[event.key.toLowerCase()];
      if (!key || modified(event)) return;
      event.preventDefault(); // arrows and space would scroll the page
      press(key);
    });
    // A key let go in a text box still lets go of the avatar.
    window.addEventListener("keyup", (event) => {
      const key = KEYMAP[event.key.toLowerCase()];
      if (key) release(key);
    });
    window.addEventListener("blur", () => {
      if (!held.size) return;
      held.clear();
      onChange([]);
    });

    const touch = isTouchScreen();
    if (pad) {
      pad.hidden = !touch;
      for (const button of pad.querySelectorAll("[data-key]")) {
        const key = button.dataset.key;
        button.addEventListener("pointerdown", (event) => {
          event.preventDefault(); // no focus change, no text selection, no emulated mouse
          button.setPointerCapture(event.pointerId);
          button.classList.add("is-held");
          press(key);
        });
        const letGo = () => {
          button.classList.remove("is-held");
          release(key);
        };
        button.addEventListener("pointerup", letGo);
        button.addEventListener("pointercancel", letGo);
        button.addEventListener("lostpointercapture", letGo);
        button.addEventListener("contextmenu", (event) => event.preventDefault()); // long press
      }
    }

    return { held: () => [...held], isTouch: touch };
  }

  window.ParallaxControls = { attach, typing };
})();
