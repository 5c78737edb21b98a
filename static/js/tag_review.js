// Tag review screen: keys j/k (next/previous call), a (keep), x (remove), e (edit),
// m/M (move down/up), s (save); keeps the selected call across htmx swaps; remembers the
// preview toggle. The form's data-swap-errors="409" lets app.js swap a conflict in.
// The page works without this file: every action is a plain form submit.
(() => {
  "use strict";
  let selected = 0;
  let advance = false; // after "keep", move on to the next call once the answer is redrawn

  const form = () => document.querySelector("form[data-tag-review]");
  const cards = () => [...document.querySelectorAll("form[data-tag-review] .tag-card")];

  function select(index, scroll) {
    const all = cards();
    if (!all.length) return null;
    selected = Math.max(0, Math.min(index, all.length - 1));
    all.forEach((card, i) => card.classList.toggle("selected", i === selected));
    const card = all[selected];
    if (scroll) card.scrollIntoView({ block: "nearest", behavior: "smooth" });
    return card;
  }

  function current() {
    return cards()[selected] || null;
  }

  function click(card, action) {
    const el = card && card.querySelector(`[data-action="${action}"]`);
    if (el) el.click();
    return el;
  }

  function openAndFocus(card, cls) {
    const details = card && card.querySelector(`details.${cls}`);
    if (!details) return;
    details.open = true;
    const field = details.querySelector("select, input[type=text], textarea");
    if (field) field.focus();
  }

  // After settling, not after swapping: htmx's settle step puts back the server-rendered class
  // attribute of every element whose id was already on the page (the cards' tag-N), which
  // would drop the "selected" class set any earlier.
  document.addEventListener("htmx:afterSettle", () => {
    if (!form()) return;
    select(advance ? selected + 1 : selected, advance);
    advance = false;
    const conflict = document.getElementById("conflict");
    if (conflict) conflict.scrollIntoView({ block: "start" });
  });

  document.addEventListener(
    "toggle",
    (event) => {
      const details = event.target;
      if (!(details instanceof HTMLDetailsElement) || details.id !== "preview") return;
      const input = form() && form().querySelector("input[name=preview]");
      if (input) input.value = details.open ? "1" : "";
    },
    true,
  );

  document.addEventListener("click", (event) => {
    const card = event.target.closest && event.target.closest(".tag-card");
    if (card) {
      const index = cards().indexOf(card);
      if (index >= 0) select(index, false);
    }
  });

  window.Benchwright.shortcuts(
    {
      j: () => { select(selected + 1, true); },
      k: () => { select(selected - 1, true); },
      a: () => { advance = Boolean(click(current(), "keep")); },
      x: () => { openAndFocus(current(), "tag-remove"); },
      e: () => { openAndFocus(current(), "tag-edit"); },
      m: () => { click(current(), "move"); },
      M: () => { click(current(), "move-before"); },
      s: () => { click(form(), "save"); },
    },
    { scope: "form[data-tag-review]", repeat: ["j", "k"] },
  );

  if (form()) select(0, false);
})();
