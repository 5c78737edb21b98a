// The item form: documents added, removed and reordered in the page (buttons, Alt+Up/Alt+Down
// in the document you are in), Ctrl+S saves, and live warnings on vague rubric criteria (the
// same rule as benchmark.items.services.criterion_warnings; the verb list comes from the form's
// data-verbs). Without this file the document buttons do the same through the server.
(function () {
  "use strict";

  var FORM = "form[data-item-form]";
  var MIN_WORDS = 6;
  var counter = 0;

  function formOf(element) {
    return element && element.closest ? element.closest(FORM) : null;
  }

  function renumber(form) {
    var blocks = form.querySelectorAll("[data-document-list] > [data-document]");
    blocks.forEach(function (block, i) {
      var number = block.querySelector("[data-document-number]");
      if (number) number.textContent = String(i + 1);
    });
  }

  function freshKey(form) {
    var key;
    do {
      counter += 1;
      key = "n" + counter;
    } while (form.querySelector('input[name="doc_key"][value="' + key + '"]'));
    return key;
  }

  function addDocument(form) {
    var template = form.querySelector("template[data-document-template]");
    var list = form.querySelector("[data-document-list]");
    if (!template || !list) return;
    var key = freshKey(form);
    var holder = document.createElement("div");
    holder.innerHTML = template.innerHTML.split("__key__").join(key);
    var block = holder.firstElementChild;
    list.appendChild(block);
    renumber(form);
    var text = block.querySelector("textarea");
    if (text) text.focus();
  }

  function moveDocument(block, direction) {
    var list = block.parentElement;
    if (direction === "up" && block.previousElementSibling) {
      list.insertBefore(block, block.previousElementSibling);
    } else if (direction === "down" && block.nextElementSibling) {
      list.insertBefore(block.nextElementSibling, block);
    } else {
      return false;
    }
    renumber(formOf(block));
    return true;
  }

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!target.closest || !formOf(target)) return;
    var form = formOf(target);
    if (target.closest("[data-add-document]")) {
      event.preventDefault();
      addDocument(form);
      return;
    }
    var remove = target.closest("[data-remove-document]");
    if (remove) {
      event.preventDefault();
      var gone = remove.closest("[data-document]");
      gone.parentElement.removeChild(gone);
      renumber(form);
      return;
    }
    var move = target.closest("[data-move]");
    if (move && move.closest("[data-document]")) {
      event.preventDefault();
      moveDocument(move.closest("[data-document]"), move.dataset.move);
      move.focus();
    }
  });

  function moveKey(event, form) {
    var block = event.target.closest && event.target.closest("[data-document]");
    if (!block || !form.contains(block)) return false;
    var focused = document.activeElement;
    if (!moveDocument(block, event.key === "ArrowUp" ? "up" : "down")) return false;
    if (focused && focused.focus) focused.focus();
  }

  if (window.Benchwright && window.Benchwright.shortcuts) {
    window.Benchwright.shortcuts({
      "ctrl+s": function (event, form) {
        var save = form.querySelector("[data-save]");
        if (save) save.click();
      },
      "alt+ArrowUp": moveKey,
      "alt+ArrowDown": moveKey,
    }, { scope: FORM, inputs: true });
  }

  // ---- unsaved input restored (static/js/drafts.js): as many document blocks as the draft
  // had, before its fields are filled in page order.
  document.addEventListener("draft:before-restore", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches(FORM)) return;
    var wanted = event.detail.pairs.filter(function (pair) { return pair[0] === "doc_text"; }).length;
    var blocks = form.querySelectorAll("[data-document-list] > [data-document]");
    for (var n = blocks.length; n < wanted; n++) addDocument(form);
    for (var i = blocks.length - 1; i >= wanted && i > 0; i--) blocks[i].parentElement.removeChild(blocks[i]);
    renumber(form);
  });

  // ---- intents offered for the chosen category (ATP-Bench intents sit under a category)

  function filterIntents(form) {
    var category = form.querySelector("select#id_category");
    var intent = form.querySelector("select#id_intent");
    if (!category || !intent) return;
    Array.prototype.forEach.call(intent.options, function (option) {
      var parent = option.dataset.category || "";
      option.hidden = Boolean(parent && category.value && parent !== category.value);
    });
    var chosen = intent.options[intent.selectedIndex];
    if (chosen && chosen.hidden) intent.value = "";
  }

  document.addEventListener("change", function (event) {
    if (event.target.matches && event.target.matches("select#id_category")) filterIntents(formOf(event.target));
  });

  // ---- vague criteria

  function verbForms(word) {
    var forms = [word];
    ["s", "es", "ed", "d", "ing"].forEach(function (suffix) {
      if (word.length > suffix.length + 1 && word.slice(-suffix.length) === suffix) {
        forms.push(word.slice(0, -suffix.length));
      }
    });
    if (word.slice(-3) === "ies") forms.push(word.slice(0, -3) + "y");
    return forms;
  }

  function warnings(text, verbs, suffixes) {
    var words = (text.match(/[A-Za-z][A-Za-z'-]*/g) || []).map(function (w) { return w.toLowerCase(); });
    var out = [];
    if (!text.trim()) return out;
    if (words.length < MIN_WORDS) out.push("Vague: fewer than six words; write a checkable sentence.");
    var hasVerb = words.some(function (word) {
      if (verbForms(word).some(function (f) { return verbs[f]; })) return true;
      return suffixes.some(function (s) { return word.length > s.length && word.slice(-s.length) === s; });
    });
    if (words.length && !hasVerb) out.push("Vague: no verb; say what the answer must do or contain.");
    return out;
  }

  function checkCriterion(input) {
    var form = formOf(input);
    if (!form) return;
    var verbs = {};
    (form.dataset.verbs || "").split(/\s+/).forEach(function (v) { if (v) verbs[v] = true; });
    var suffixes = (form.dataset.verbSuffixes || "").split(/\s+/).filter(Boolean);
    var box = input.parentElement.querySelector("[data-criterion-warning]");
    if (box) box.textContent = warnings(input.value, verbs, suffixes).join(" ");
  }

  document.addEventListener("input", function (event) {
    if (event.target.matches && event.target.matches("[data-criterion]")) checkCriterion(event.target);
  });

  function checkAll() {
    document.querySelectorAll(FORM + " [data-criterion]").forEach(checkCriterion);
    document.querySelectorAll(FORM).forEach(filterIntents);
  }
  document.addEventListener("DOMContentLoaded", checkAll);
  document.addEventListener("htmx:afterSwap", checkAll);
})();
