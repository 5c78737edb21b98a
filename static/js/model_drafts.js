// Model drafting: keys on the candidates. j / ArrowDown next, ArrowUp previous, k keep, e edit
// (opens the inline editor and focuses it), r reject; Ctrl+Enter in the editor saves the edit.
// Every action also works without this file (the buttons post the same form).
(function () {
  "use strict";

  function cards() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-candidate]"));
  }

  function active() {
    var focused = document.activeElement && document.activeElement.closest &&
      document.activeElement.closest("[data-candidate]");
    if (focused) return focused;
    var pending = cards().filter(function (c) { return c.getAttribute("data-status") === "pending"; });
    return pending[0] || null;
  }

  function step(by) {
    return function () {
      var all = cards();
      if (!all.length) return false;
      var index = all.indexOf(active());
      var next = all[Math.max(0, Math.min(all.length - 1, index + by))];
      if (next) { next.focus(); next.scrollIntoView({ block: "nearest" }); }
    };
  }

  function press(action) {
    return function () {
      var card = active();
      var button = card && card.querySelector('[data-action="' + action + '"]');
      if (!button) return false;
      var details = button.closest("details");
      if (action === "edit" && details && !details.open) {
        details.open = true;
        var field = details.querySelector("[data-edit-field]");
        if (field) field.focus();
        return;
      }
      if (action === "edit" && !details) {
        var first = card.querySelector("[data-edit-field]");
        if (first && document.activeElement !== first) { first.focus(); return; }
      }
      button.click();
    };
  }

  window.Benchwright.shortcuts({
    j: step(1),
    ArrowDown: step(1),
    ArrowUp: step(-1),
    k: press("keep"),
    e: press("edit"),
    r: press("reject"),
    "ctrl+Enter": function (event) {
      var card = event.target.closest && event.target.closest("[data-candidate]");
      var button = card && card.querySelector('[data-action="edit"]');
      if (!button) return false;
      button.click();
    },
  }, { scope: "[data-model-draft]", inputs: ["ctrl+Enter"], repeat: ["j", "ArrowDown", "ArrowUp"] });

  // After a decision, go on with the next pending candidate.
  document.addEventListener("htmx:afterSwap", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || !target.id || target.id.indexOf("candidate-") !== 0) return;
    var next = cards().filter(function (c) { return c.getAttribute("data-status") === "pending"; })[0];
    (next || document.getElementById(target.id) || document.body).focus();
  });
})();
