// Judge page (and the blind-solve page): time on item, and the keys shown on the page:
//   digits   pick a choice (the key shown by each; on a binary or 0-2 scale the pick submits)
//   Enter    submit once a choice is picked (outside a text field; in the comment it is a
//            new line), Ctrl+Enter submit from anywhere, the comment included
//   c r e i o p  move to the field whose label shows the key (comment, reason, relabel)
//   n next, u undo the last judgment
// The judging area is swapped in place by htmx after a submit (the next item), so everything
// here looks the form up when a key is pressed, and the timer starts again on each swap.
(() => {
  "use strict";
  let started = performance.now();

  const form = () => document.getElementById("judgment");

  // The seconds on the item go with the submit; capture phase: before htmx reads the form.
  document.addEventListener(
    "submit",
    (event) => {
      if (event.target.id !== "judgment") return;
      const seconds = event.target.querySelector("input[name=seconds]");
      if (seconds) seconds.value = ((performance.now() - started) / 1000).toFixed(1);
    },
    true,
  );
  // A new item swapped in: its time starts now, and no field of it holds the focus (htmx
  // gives the focus back to the element with the id the focused one had, the new comment,
  // where the keys would be text).
  const swappedIn = (event) => event.detail.target && event.detail.target.id === "judging";
  document.addEventListener("htmx:afterSwap", (event) => {
    if (swappedIn(event)) started = performance.now();
  });
  document.addEventListener("htmx:beforeSwap", (event) => {
    const active = document.activeElement;
    if (swappedIn(event) && active && event.detail.target.contains(active)) active.blur();
  });
  function submit() {
    const f = form();
    if (!f) return false;
    if (f.dataset.sending) return undefined; // one submit per item: a second key press waits
    if (!f.checkValidity()) {
      f.reportValidity();
      return undefined;
    }
    f.dataset.sending = "1";
    f.requestSubmit();
  }
  document.addEventListener("htmx:afterRequest", (event) => {
    const f = form();
    if (f && event.detail.elt === f) delete f.dataset.sending;
  });

  function radios() {
    const f = form();
    return f ? [...f.querySelectorAll("input[name=value][type=radio]")] : [];
  }

  function choose(event) {
    const f = form();
    const label = f && f.querySelector(`label.choice[data-choice-key="${event.key}"]`);
    const pick = label && label.querySelector("input[type=radio]");
    if (!pick) return false;
    pick.checked = true;
    if (f.hasAttribute("data-pick-submits")) submit();
  }

  // Enter: submits once a choice is picked. Not on a button or link (their own Enter), not in
  // a text field (the comment's new line; a single-line answer submits by itself).
  function enter(event) {
    const target = event.target;
    if (target.closest && target.closest("button, a, summary")) return false;
    if (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && target.type !== "radio")) return false;
    const all = radios();
    if (!form() || (all.length && !all.some((r) => r.checked))) return false;
    submit();
  }

  function focusKey(event) {
    const area = document.getElementById("judging") || document;
    const f = form();
    // The blind-solve page's comment has no data-focus-key: c finds it by name.
    const field = area.querySelector(`[data-focus-key="${event.key}"]`) ||
      (event.key === "c" && f ? f.querySelector("textarea[name=comment]") : null);
    if (!field) return false;
    field.focus();
  }

  const keys = { n: "[data-key=n]", u: "[data-key=u]", Enter: enter };
  for (const letter of "creiop") keys[letter] = focusKey;
  for (const digit of "0123456789") keys[digit] = choose;
  window.Benchwright.shortcuts(keys);
  // Ctrl+Enter, and Enter in a select (a relabel field, the reason), work while in the field.
  window.Benchwright.shortcuts(
    {
      "ctrl+Enter": () => submit(),
      Enter: (event) => (event.target.tagName === "SELECT" ? enter({ target: document.body }) : false),
    },
    { inputs: true },
  );
})();
