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

  // ---- Folding steps. A folded step shows one line; its fields stay in the form. Which steps
  // are open is kept per editor (by step id) for this tab, so a re-check, a save or a reload
  // keeps the one being edited open; a new page opens with every step folded, except steps
  // with a problem to fix and a step just added.
  var openKey = "benchwright:trajectory-open:" + window.location.pathname;
  var openNext = null; // "last": open the step an "add" creates

  function stepId(step) {
    var input = step.querySelector('input[name$="-id"]');
    return (input && input.value.trim()) || "#" + step.dataset.step;
  }

  function loadOpen() {
    try { return JSON.parse(window.sessionStorage.getItem(openKey) || "[]"); } catch (e) { return []; }
  }

  function saveOpen(form) {
    var ids = [];
    form.querySelectorAll(".traj-step").forEach(function (step) {
      if (!step.classList.contains("is-folded")) ids.push(stepId(step));
    });
    try { window.sessionStorage.setItem(openKey, JSON.stringify(ids)); } catch (e) { /* private mode */ }
  }

  function refit(step) {
    if (!window.ImageEditor) return;
    step.querySelectorAll("[data-image-editor]").forEach(function (node) {
      var editor = window.ImageEditor.get(node);
      if (editor && typeof editor.fit === "function") editor.fit();
    });
  }

  function setFolded(step, folded) {
    step.classList.toggle("is-folded", folded);
    var button = step.querySelector("[data-fold]");
    if (button) button.setAttribute("aria-expanded", folded ? "false" : "true");
    if (!folded) refit(step);
  }

  function initFolding(form) {
    var open = loadOpen();
    var steps = form.querySelectorAll(".traj-step");
    steps.forEach(function (step, n) {
      var button = step.querySelector("[data-fold]");
      if (button) button.hidden = false;
      var keep = open.indexOf(stepId(step)) >= 0 || step.classList.contains("has-errors") ||
        (openNext === "last" && n === steps.length - 1);
      setFolded(step, !keep);
    });
    openNext = null;
    var all = form.querySelector("[data-fold-all]");
    if (all) all.hidden = steps.length < 2;
    saveOpen(form);
  }

  function toggle(step, form) {
    setFolded(step, !step.classList.contains("is-folded"));
    saveOpen(form);
  }

  // Alt+O: fold or unfold the step holding the focus (folding it leaves the focus on its
  // fold button, so the keys go on working).
  function foldKey(event, form) {
    var step = event.target.closest && event.target.closest(".traj-step");
    if (!step || !form.contains(step)) return false;
    toggle(step, form);
    if (step.classList.contains("is-folded")) step.querySelector("[data-fold]").focus();
    else {
      var first = step.querySelector(".traj-step-body textarea, .traj-step-body input:not([type=hidden]), .traj-step-body select");
      if (first) first.focus();
    }
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-fold], [data-fold-all-action]");
    var form = editorOf(button);
    if (!button || !form) return;
    if (button.hasAttribute("data-fold")) {
      toggle(button.closest(".traj-step"), form);
      return;
    }
    var fold = button.dataset.foldAllAction === "fold";
    form.querySelectorAll(".traj-step").forEach(function (step) { setFolded(step, fold); });
    saveOpen(form);
  });

  // A submit button that adds a step: open the new one after the swap.
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest('button[name="op"]');
    if (button && editorOf(button) && /^add:/.test(button.value)) {
      saveOpen(editorOf(button));
      openNext = "last";
    }
  }, true);

  // ---- Arguments that follow the crop: a box drawn or changed in a step's image editor
  // becomes the bbox_2d of the step's Arguments JSON (kept as the server writes it:
  // {"key": value, ...}), when the step's tool is a crop or its arguments carry a box already.
  function pyJson(value) {
    if (Array.isArray(value)) return "[" + value.map(pyJson).join(", ") + "]";
    if (value && typeof value === "object") {
      return "{" + Object.keys(value).map(function (k) { return JSON.stringify(k) + ": " + pyJson(value[k]); }).join(", ") + "}";
    }
    return JSON.stringify(value);
  }

  document.addEventListener("image-editor:change", function (event) {
    var step = event.target.closest && event.target.closest(".traj-step");
    var box = event.detail && event.detail.bbox_2d;
    if (!step || !editorOf(step) || !box) return;
    var input = step.querySelector("[data-step-args]");
    var tool = step.querySelector('select[name$="-tool"]');
    if (!input) return;
    var args;
    try { args = input.value.trim() ? JSON.parse(input.value) : {}; } catch (e) { return; } // leave a typo to the check
    if (!args || typeof args !== "object" || Array.isArray(args)) return;
    if (!("bbox_2d" in args) && !(tool && tool.value === "crop")) return;
    args.bbox_2d = box.map(function (v) { return Math.round(v); });
    var text = pyJson(args);
    if (text !== input.value) {
      input.value = text;
      input.dispatchEvent(new Event("input", { bubbles: true }));
    }
  });

  // Every key works while typing in the editor's fields.
  window.Benchwright.shortcuts({
    "ctrl+s": function (event, form) { press(form.querySelector("[data-save]")); },
    "alt+ArrowUp": move,
    "alt+ArrowDown": move,
    "alt+o": foldKey,
  }, { scope: EDITOR, inputs: true });

  // Fold the editor on load and each time htmx swaps a new one in (htmx:load fires on it).
  function initAll(root) {
    var scope = root && root.querySelectorAll ? root : document;
    var forms = Array.prototype.slice.call(scope.querySelectorAll(EDITOR));
    if (scope.matches && scope.matches(EDITOR)) forms.push(scope);
    forms.forEach(initFolding);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", function () { initAll(document); });
  else initAll(document);
  document.addEventListener("htmx:load", function (event) { initAll(event.target); });

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
