// Human evaluation of answers: the rating page's keys and count steppers, and time on page.
//   ATP-Bench B.2: i / I one more / one fewer inappropriate image, m / M the same for missed
//   images, 1-5 the final score (FS), s submits. Likert: 1-5 score and submit. Pairwise:
//   a / b / t (tie) choose and submit. Everywhere: c comment, Ctrl+Enter submit (also from
//   the comment), n next.
(() => {
  "use strict";
  const form = document.getElementById("rating");
  const started = performance.now();
  if (form) {
    form.addEventListener("submit", () => {
      const seconds = form.querySelector("input[name=seconds]");
      if (seconds) seconds.value = ((performance.now() - started) / 1000).toFixed(1);
    });
  }

  // Count steppers: buttons marked data-step="+1|-1" data-target="<input id>".
  function step(id, delta) {
    const input = document.getElementById(id);
    if (!input) return false;
    const low = input.min === "" ? 0 : Number(input.min);
    const high = input.max === "" ? Infinity : Number(input.max);
    const now = Number.parseInt(input.value, 10);
    input.value = String(Math.min(high, Math.max(low, (Number.isNaN(now) ? low : now) + delta)));
    return true;
  }
  document.addEventListener("click", (event) => {
    const button = event.target.closest && event.target.closest("button[data-step]");
    if (button) step(button.dataset.target, Number(button.dataset.step));
  });

  function pick(name, value, submit) {
    const radio = form && form.querySelector(`input[type=radio][name="${name}"][value="${value}"]`);
    if (!radio) return false;
    radio.checked = true;
    if (submit) form.requestSubmit();
    return true;
  }

  const keys = {
    n: "[data-key=n]",
    c: () => {
      const comment = form && form.querySelector("textarea[name=comment]");
      if (!comment) return false;
      comment.focus();
      return true;
    },
  };
  const scale = form ? form.dataset.scale : "";
  if (scale === "atp") {
    keys.i = () => step("f-inappr", 1);
    keys.I = () => step("f-inappr", -1);
    keys.m = () => step("f-mi", 1);
    keys.M = () => step("f-mi", -1);
    for (const digit of "12345") keys[digit] = () => pick("fs", digit, false);
    keys.s = () => {
      form.requestSubmit();
      return true;
    };
  } else if (scale === "likert") {
    for (const digit of "12345") keys[digit] = () => pick("value", digit, true);
  } else if (scale === "pair") {
    keys.a = () => pick("value", "a", true);
    keys.b = () => pick("value", "b", true);
    keys.t = () => pick("value", "tie", true);
  }
  // Ctrl+Enter submits, also from the comment (a typed comment need not be left first).
  keys["ctrl+Enter"] = () => {
    if (!form) return false;
    form.requestSubmit();
  };
  window.Benchwright.shortcuts(keys, { inputs: ["ctrl+Enter"] });
})();
