// Judge page (and the blind-solve page): time on item, and keys 0-9 (choose), c (comment), n (next).
(() => {
  "use strict";
  const form = document.getElementById("judgment");
  const started = performance.now();
  if (form) {
    form.addEventListener("submit", () => {
      const seconds = form.querySelector("input[name=seconds]");
      if (seconds) seconds.value = ((performance.now() - started) / 1000).toFixed(1);
    });
  }

  // A binary task, or a form marked data-keys="value" (the 0-2 rating of a unit: rate the
  // judge, score a criterion), picks by value and submits; others pick the n-th choice.
  function choose(event) {
    const radios = form ? [...form.querySelectorAll("input[name=value][type=radio]")] : [];
    const binary = radios.some((r) => r.value === "1") && radios.length === 2;
    const byValue = binary || (form !== null && form.dataset.keys === "value");
    const pick = byValue ? radios.find((r) => r.value === event.key) : radios[Number(event.key) - 1];
    if (!pick) return false;
    pick.checked = true;
    if (byValue) form.requestSubmit();
  }

  const keys = {
    n: "[data-key=n]",
    c: () => {
      const comment = form && form.querySelector("textarea[name=comment]");
      if (!comment) return false;
      comment.focus();
    },
  };
  for (const digit of "0123456789") keys[digit] = choose;
  window.Benchwright.shortcuts(keys);
})();
