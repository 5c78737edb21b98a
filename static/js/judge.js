// Judge page: time on item, and keys 0-9 (choose), c (comment), n (next).
(() => {
  const form = document.getElementById("judgment");
  const started = performance.now();
  if (form) {
    form.addEventListener("submit", () => {
      const seconds = form.querySelector("input[name=seconds]");
      if (seconds) seconds.value = ((performance.now() - started) / 1000).toFixed(1);
    });
  }
  document.addEventListener("keydown", (event) => {
    const t = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (t && (t.tagName === "TEXTAREA" || t.tagName === "INPUT" && t.type === "text" || t.tagName === "SELECT")) {
      if (event.key === "Escape") t.blur();
      return;
    }
    if (event.key === "n") {
      const next = document.querySelector("[data-key=n]");
      if (next) { event.preventDefault(); next.click(); }
      return;
    }
    if (!form) return;
    if (event.key === "c") {
      const comment = form.querySelector("textarea[name=comment]");
      if (comment) { event.preventDefault(); comment.focus(); }
      return;
    }
    if (/^[0-9]$/.test(event.key)) {
      const radios = [...form.querySelectorAll("input[name=value][type=radio]")];
      const binary = radios.some((r) => r.value === "1") && radios.length === 2;
      const pick = binary ? radios.find((r) => r.value === event.key) : radios[Number(event.key) - 1];
      if (pick) {
        event.preventDefault();
        pick.checked = true;
        if (binary) form.requestSubmit();
      }
    }
  });
})();
