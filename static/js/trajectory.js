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

  // Click, not form.requestSubmit(button): htmx learns which button submitted from the click,
  // and without its op the server takes the post for a save.
  function press(button) {
    if (button && !button.disabled) button.click();
  }

  // Alt+Up / Alt+Down inside a step: move it (not inside the image editor, where Alt+arrows
  // resize the crop box).
  function move(event, form) {
    var target = event.target;
    if (!target.closest || target.closest("[data-image-editor]")) return false;
    var step = target.closest(".traj-step");
    if (!step || !form.contains(step)) return false;
    var direction = event.key === "ArrowUp" ? "up" : "down";
    var button = step.querySelector('[data-move="' + direction + '"]');
    if (!button || button.disabled) return false;
    press(button); // the click listener below remembers the move
  }

  // Every key works while typing in the editor's fields.
  window.Benchwright.shortcuts({
    "ctrl+s": function (event, form) { press(form.querySelector("[data-save]")); },
    "alt+ArrowUp": move,
    "alt+ArrowDown": move,
  }, { scope: EDITOR, inputs: true });

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
