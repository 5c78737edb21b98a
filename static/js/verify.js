// Blind verification. The solve page: a goes to the answer, Ctrl+Enter submits; after
// answering, a opens the audit. The audit checklist:
// j/k move between steps, 1-4 tick a check of the current step, y ticks all of it and moves on,
// c comments, s saves, n saves and opens the next item.
(() => {
  "use strict";
  const form = document.querySelector("form[data-audit]");
  if (!form) {
    // Before answering: a goes to the answer (Enter there submits), Ctrl+Enter submits from
    // the comment too. After: a opens the audit.
    const solve = document.querySelector("form.solve-form");
    window.Benchwright.shortcuts(
      {
        a: () => {
          const audit = document.querySelector("[data-key=a]");
          const answer = solve && solve.querySelector("input[name=answer]");
          if (audit) audit.click();
          else if (answer) answer.focus();
          else return false;
        },
        o: "[data-key=o]", // the audits list: the first item
        "ctrl+Enter": () => {
          if (!solve) return false;
          solve.requestSubmit();
        },
      },
      { inputs: ["ctrl+Enter"] },
    );
    return;
  }
  const steps = [...form.querySelectorAll(".audit-step")];
  let current = 0;
  const show = (i) => {
    if (!steps.length) return;
    current = Math.max(0, Math.min(steps.length - 1, i));
    steps.forEach((s, n) => s.classList.toggle("current", n === current));
    steps[current].scrollIntoView({ block: "nearest" });
  };
  steps.forEach((s, n) => s.addEventListener("focusin", () => show(n)));
  show(0);

  const boxes = () => (steps.length ? [...steps[current].querySelectorAll("input[type=checkbox]")] : []);
  const keys = {
    j: () => show(current + 1),
    k: () => show(current - 1),
    y: () => {
      boxes().forEach((b) => { b.checked = true; });
      show(current + 1);
    },
    c: () => {
      const comment = steps.length && steps[current].querySelector("textarea");
      if (!comment) return false;
      comment.focus();
    },
    s: "[data-key=s]",
    n: "[data-key=n]",
  };
  for (const digit of "123456789") {
    keys[digit] = (event) => {
      const box = boxes()[Number(event.key) - 1];
      if (!box) return false;
      box.checked = !box.checked;
    };
  }
  window.Benchwright.shortcuts(keys, { scope: "form[data-audit]", repeat: ["j", "k"] });
})();
