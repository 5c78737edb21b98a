// Adjudication (review/adjudication): a reviewer settles an item from the keyboard.
//   The disagreement lists (and the joint-review queue): o opens the first item.
//   The decision form (form[data-decision]): 1-9 pick the n-th outcome, r the reason, s (or
//   Ctrl+Enter, also from the reason) records it, after a confirm step in a <dialog>: Enter
//   records, Esc goes back. On the joint review, e edits the answer, and Ctrl+Enter in that
//   form saves it. Without JS the forms submit at once, as before.
(() => {
  "use strict";
  const form = document.querySelector("form[data-decision]");
  const keys = { o: "[data-key=o]" };
  if (!form) {
    window.Benchwright.shortcuts(keys);
    return;
  }
  const dialog = document.getElementById("confirm-decision");
  const radios = [...form.querySelectorAll("input[type=radio][name=verdict]")];
  const asking = () => Boolean(dialog && dialog.open);
  let confirmed = false;

  form.addEventListener("submit", (event) => {
    if (confirmed || !dialog || typeof dialog.showModal !== "function") return;
    const picked = radios.find((radio) => radio.checked);
    if (!picked) return; // the server says an outcome is missing
    event.preventDefault();
    if (asking()) return;
    const label = picked.closest("label").querySelector(".choice-label");
    const reason = form.querySelector("textarea[name=reason]");
    dialog.querySelector("[data-confirm-verdict]").textContent = label ? label.textContent : picked.value;
    dialog.querySelector("[data-confirm-reason]").textContent =
      reason && reason.value.trim() ? reason.value.trim() : "(no reason given)";
    dialog.showModal();
    dialog.querySelector("[data-confirm-yes]").focus();
  });
  dialog?.querySelector("[data-confirm-yes]").addEventListener("click", () => {
    confirmed = true;
    dialog.close();
    form.requestSubmit();
  });
  dialog?.querySelector("[data-confirm-no]").addEventListener("click", () => dialog.close());

  radios.forEach((radio, n) => {
    if (n < 9) {
      keys[String(n + 1)] = () => {
        if (asking()) return false;
        radio.checked = true;
        radio.focus();
      };
    }
  });
  keys.r = () => {
    const reason = form.querySelector("textarea[name=reason]");
    if (!reason || asking()) return false;
    reason.focus();
  };
  keys.s = () => {
    if (asking()) return false;
    form.requestSubmit();
  };
  keys["ctrl+Enter"] = (event) => {
    if (asking()) return false;
    const owner = event.target.closest ? event.target.closest("form[method=post]") : null;
    (owner && owner.closest("main") ? owner : form).requestSubmit();
  };
  keys.e = () => {
    const field = document.querySelector("form#revise input:not([type=hidden]), form#revise textarea");
    if (!field || asking()) return false;
    field.focus();
  };
  window.Benchwright.shortcuts(keys, { inputs: ["ctrl+Enter"] });
})();
