// Audit checklist: j/k move between steps, 1-4 tick a check of the current step, y ticks all
// of it and moves on, c comments, s saves, n saves and opens the next item.
(() => {
  const form = document.querySelector("form[data-audit]");
  if (!form) {
    // The solve page after answering: a opens the audit.
    document.addEventListener("keydown", (event) => {
      const t = event.target;
      if (event.ctrlKey || event.metaKey || event.altKey || (t && /^(TEXTAREA|INPUT|SELECT)$/.test(t.tagName))) return;
      const link = event.key === "a" && document.querySelector("[data-key=a]");
      if (link) { event.preventDefault(); link.click(); }
    });
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
  document.addEventListener("keydown", (event) => {
    const t = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (t && (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type === "text") || t.tagName === "SELECT")) {
      if (event.key === "Escape") t.blur();
      return;
    }
    const boxes = steps.length ? [...steps[current].querySelectorAll("input[type=checkbox]")] : [];
    if (event.key === "j" || event.key === "k") {
      event.preventDefault();
      show(current + (event.key === "j" ? 1 : -1));
    } else if (/^[1-9]$/.test(event.key) && boxes[Number(event.key) - 1]) {
      event.preventDefault();
      const box = boxes[Number(event.key) - 1];
      box.checked = !box.checked;
    } else if (event.key === "y") {
      event.preventDefault();
      boxes.forEach((b) => { b.checked = true; });
      show(current + 1);
    } else if (event.key === "c" && steps.length) {
      const comment = steps[current].querySelector("textarea");
      if (comment) { event.preventDefault(); comment.focus(); }
    } else if (event.key === "s" || event.key === "n") {
      const button = form.querySelector(`[data-key=${event.key}]`);
      if (button) { event.preventDefault(); form.requestSubmit(button); }
    }
  });
})();
