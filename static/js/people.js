// Members and people pages: a link shown once (an invitation, a password link) is selected
// when focused, and its Copy button puts it on the clipboard.
(() => {
  "use strict";
  document.querySelectorAll("input[data-link]").forEach((input) => {
    input.addEventListener("focus", () => input.select());
  });
  document.querySelectorAll("button[data-copy]").forEach((button) => {
    button.addEventListener("click", () => {
      const input = document.getElementById(button.dataset.copy);
      if (!input) return;
      input.select();
      const done = () => { button.textContent = "Copied"; };
      if (navigator.clipboard) {
        navigator.clipboard.writeText(input.value).then(done, () => document.execCommand("copy") && done());
      } else if (document.execCommand("copy")) {
        done();
      }
    });
  });
})();
