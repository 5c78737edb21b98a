// Reference-trajectory editor: keyboard shortcuts, and focus and scroll after a swap. The form's
// data-swap-errors="400 409" lets app.js swap a draft with mistakes and a stale save into it.
// The editor works without this file (every action is a submit button of the form).
(function () {
  "use strict";

  var EDITOR = "form[data-trajectory-editor]";
  var lastMove = null;

  function editorOf(element) {
    return element && element.closest ? element.closest(EDITOR) : null;
  }

  function press(button) {
    if (!button || button.disabled) return false;
    var form = editorOf(button);
    if (form && typeof form.requestSubmit === "function") form.requestSubmit(button);
    else button.click();
    return true;
  }

  document.addEventListener("keydown", function (event) {
    var form = editorOf(event.target) || document.querySelector(EDITOR);
    if (!form) return;
    // Ctrl+S / Cmd+S: save.
    if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === "s") {
      event.preventDefault();
      press(form.querySelector("[data-save]"));
      return;
    }
    // Alt+Up / Alt+Down inside a step: move it (not inside the image editor, where Alt+arrows
    // resize the crop box).
    if (event.altKey && !event.ctrlKey && !event.metaKey &&
        (event.key === "ArrowUp" || event.key === "ArrowDown")) {
      if (event.target.closest && event.target.closest("[data-image-editor]")) return;
      var step = event.target.closest && event.target.closest(".traj-step");
      if (!step || !editorOf(step)) return;
      var direction = event.key === "ArrowUp" ? "up" : "down";
      var button = step.querySelector('[data-move="' + direction + '"]');
      if (button && !button.disabled) {
        event.preventDefault();
        var index = parseInt(step.dataset.step, 10);
        lastMove = { direction: direction, index: direction === "up" ? index - 1 : index + 1 };
        press(button);
      }
    }
  });

  // Remember which step a move button click moved, to give it focus back after the swap.
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-move]");
    if (!button || !editorOf(button)) return;
    var step = button.closest(".traj-step");
    var index = parseInt(step.dataset.step, 10);
    var direction = button.dataset.move;
    lastMove = { direction: direction, index: direction === "up" ? index - 1 : index + 1 };
  });

  document.addEventListener("htmx:afterSwap", function (event) {
    var form = event.detail.target;
    if (!form || !form.matches || !form.matches(EDITOR)) return;
    if (lastMove) {
      var step = form.querySelector('.traj-step[data-step="' + lastMove.index + '"]');
      var button = step && step.querySelector('[data-move="' + lastMove.direction + '"]');
      var focus = button && !button.disabled ? button : step && step.querySelector("textarea, input, select");
      if (focus) focus.focus();
      lastMove = null;
    }
    var banner = form.querySelector("#conflict, #error-summary");
    if (banner) banner.scrollIntoView({ block: "center" });
  });
})();
