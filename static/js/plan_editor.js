// m&m's plan editor: draws the plan's steps from the JSON form (the textarea "steps") and
// writes every change back into it, so the form always posts the JSON the list shows. Each
// write fires "input" on the textarea, which htmx posts (debounced) to the findings endpoint;
// the findings that come back are placed next to the step and argument they concern.
// Without this file the textarea is the editor: the JSON is edited directly and saved.
(function () {
  "use strict";

  var FORM = "form[data-plan-editor]";

  function readJson(id, fallback) {
    var node = document.getElementById(id);
    if (!node) return fallback;
    try { return JSON.parse(node.textContent); } catch (e) { return fallback; }
  }

  function isPlan(value) {
    if (!Array.isArray(value)) return false;
    return value.every(function (s) {
      return s && typeof s === "object" && !Array.isArray(s) &&
        (s.args === undefined || (s.args && typeof s.args === "object" && !Array.isArray(s.args)));
    });
  }

  function Editor(form) {
    this.form = form;
    this.textarea = form.querySelector("#plan-json");
    this.list = form.querySelector("#plan-steps");
    this.template = document.getElementById("plan-step-template");
    this.tools = readJson("plan-tools", []);
    this.files = readJson("plan-input-files", []);
    this.byName = {};
    for (var i = 0; i < this.tools.length; i++) this.byName[this.tools[i].name] = this.tools[i];
    this.steps = null;
  }

  Editor.prototype.start = function () {
    var self = this;
    if (!this.textarea || !this.list || !this.template) return;
    if (!this.load(this.textarea.value)) return; // not a plan the list can show: JSON only
    this.list.hidden = false;
    this.form.querySelector(".plan-add").hidden = false;
    var box = this.form.querySelector("#plan-json-box");
    if (box) box.open = false;
    this.render();
    this.textarea.addEventListener("input", function (event) {
      if (event.isTrusted && self.load(self.textarea.value)) self.render();
    });
    this.form.addEventListener("click", function (event) { self.click(event); });
    this.form.addEventListener("change", function (event) { self.change(event); });
    this.form.addEventListener("input", function (event) { self.input(event); });
    // Unsaved input restored into the JSON (static/js/drafts.js): draw its steps.
    this.form.addEventListener("draft:restored", function () {
      if (self.load(self.textarea.value)) { self.render(); self.sync(); }
    });
  };

  Editor.prototype.load = function (text) {
    var value;
    try { value = JSON.parse(text); } catch (e) { return false; }
    if (!isPlan(value)) return false;
    value.forEach(function (s) { if (!s.args) s.args = {}; });
    this.steps = value;
    return true;
  };

  Editor.prototype.sync = function () {
    this.textarea.value = JSON.stringify(this.steps, null, 2);
    this.textarea.dispatchEvent(new Event("input", { bubbles: true }));
  };

  Editor.prototype.nextId = function () {
    var top = -1;
    this.steps.forEach(function (s) { if (typeof s.id === "number" && s.id > top) top = s.id; });
    return top + 1;
  };

  function option(value, label) {
    var o = document.createElement("option");
    o.value = value;
    o.textContent = label;
    return o;
  }

  function shown(value) {
    return typeof value === "string" ? value : JSON.stringify(value);
  }

  Editor.prototype.references = function (index) {
    var refs = [];
    for (var j = 0; j < index; j++) {
      var tool = this.byName[this.steps[j].name];
      if (!tool) continue;
      for (var k = 0; k < tool.outputs.length; k++) {
        refs.push("<node-" + this.steps[j].id + ">." + tool.outputs[k]);
      }
    }
    return refs.concat(this.files);
  };

  Editor.prototype.argRow = function (index, name, value, spec) {
    var row = document.createElement("div");
    row.className = "plan-arg" + (spec ? "" : " plan-arg-extra");
    row.setAttribute("data-arg", name);
    var id = "plan-arg-" + index + "-" + name.replace(/[^\w-]/g, "_");
    var label = document.createElement("label");
    label.setAttribute("for", id);
    var strong = document.createElement("span");
    strong.className = "mono";
    strong.textContent = name;
    label.appendChild(strong);
    var hint = document.createElement("span");
    hint.className = "muted small";
    hint.textContent = spec ? (spec.type ? " " + spec.type : "") : " not an input of this tool (clear it to remove)";
    label.appendChild(hint);
    var input = document.createElement("input");
    input.type = "text";
    input.id = id;
    input.className = "plan-arg-value";
    input.setAttribute("data-arg-input", name);
    input.setAttribute("list", "plan-refs-" + index);
    input.setAttribute("aria-label", "Step " + (index + 1) + " · " + name);
    input.autocomplete = "off";
    if (value !== undefined) input.value = shown(value);
    if (value !== undefined && typeof value !== "string") input.setAttribute("data-json", "1");
    if (spec && spec.description) input.title = spec.description;
    var findings = document.createElement("ul");
    findings.className = "plain plan-arg-findings";
    row.appendChild(label);
    row.appendChild(input);
    row.appendChild(findings);
    return row;
  };

  Editor.prototype.render = function () {
    var self = this;
    this.list.textContent = "";
    this.steps.forEach(function (step, index) {
      var node = self.template.content.firstElementChild.cloneNode(true);
      node.setAttribute("data-index", String(index));
      node.querySelector(".plan-step-id").textContent = "<node-" + step.id + ">";
      var select = node.querySelector(".plan-tool");
      select.id = "plan-tool-" + index;
      select.setAttribute("aria-label", "Step " + (index + 1) + " tool");
      node.querySelector("label").setAttribute("for", select.id);
      select.appendChild(option("", "Choose a tool…"));
      self.tools.forEach(function (t) { select.appendChild(option(t.name, t.name)); });
      if (step.name && !self.byName[step.name]) select.appendChild(option(step.name, step.name + " (not in the toolset)"));
      select.value = step.name || "";
      var tool = self.byName[step.name];
      node.querySelector(".plan-tool-outputs").textContent = tool && tool.outputs.length
        ? "Outputs: " + tool.outputs.map(function (o) { return "<node-" + step.id + ">." + o; }).join(", ")
        : "";
      var args = node.querySelector(".plan-args");
      var seen = {};
      (tool ? tool.inputs : []).forEach(function (spec) {
        seen[spec.name] = true;
        args.appendChild(self.argRow(index, spec.name, step.args[spec.name], spec));
      });
      Object.keys(step.args).forEach(function (name) {
        if (!seen[name]) args.appendChild(self.argRow(index, name, step.args[name], null));
      });
      var list = document.createElement("datalist");
      list.id = "plan-refs-" + index;
      self.references(index).forEach(function (r) { list.appendChild(option(r, r)); });
      args.appendChild(list);
      node.querySelector('[data-move="up"]').disabled = index === 0;
      node.querySelector('[data-move="down"]').disabled = index === self.steps.length - 1;
      self.list.appendChild(node);
    });
    this.place();
  };

  // Put each finding of the findings panel next to its step (and argument).
  Editor.prototype.place = function () {
    var self = this;
    this.list.querySelectorAll(".plan-step-findings, .plan-arg-findings").forEach(function (ul) { ul.textContent = ""; });
    this.list.querySelectorAll("[data-arg-input]").forEach(function (input) {
      input.removeAttribute("aria-invalid");
    });
    document.querySelectorAll("#plan-findings li.plan-finding").forEach(function (li) {
      var index = li.getAttribute("data-step");
      if (index === "" || index === null) return;
      var step = self.list.querySelector('.plan-step[data-index="' + index + '"]');
      if (!step) return;
      var arg = li.getAttribute("data-arg");
      var target = null;
      if (arg) {
        step.querySelectorAll(".plan-arg").forEach(function (row) {
          if (row.getAttribute("data-arg") === arg) {
            target = row.querySelector(".plan-arg-findings");
            row.querySelector("input").setAttribute("aria-invalid", "true");
          }
        });
      }
      (target || step.querySelector(".plan-step-findings")).appendChild(li.cloneNode(true));
    });
  };

  Editor.prototype.indexOf = function (element) {
    var step = element.closest ? element.closest(".plan-step") : null;
    return step ? Number(step.getAttribute("data-index")) : -1;
  };

  Editor.prototype.move = function (index, delta, focusSelector) {
    var to = index + delta;
    if (index < 0 || to < 0 || to >= this.steps.length) return;
    var step = this.steps.splice(index, 1)[0];
    this.steps.splice(to, 0, step);
    this.render();
    this.sync();
    var node = this.list.querySelector('.plan-step[data-index="' + to + '"]');
    var focus = node && (node.querySelector(focusSelector || ".plan-tool") || node.querySelector(".plan-tool"));
    if (focus) focus.focus();
  };

  Editor.prototype.click = function (event) {
    var button = event.target.closest ? event.target.closest("button") : null;
    if (!button || !this.form.contains(button)) return;
    if (button.hasAttribute("data-add-step")) {
      this.steps.push({ id: this.nextId(), name: "", args: {} });
      this.render();
      this.sync();
      this.list.lastElementChild.querySelector(".plan-tool").focus();
    } else if (button.hasAttribute("data-remove")) {
      this.steps.splice(this.indexOf(button), 1);
      this.render();
      this.sync();
    } else if (button.hasAttribute("data-move")) {
      var up = button.getAttribute("data-move") === "up";
      this.move(this.indexOf(button), up ? -1 : 1, '[data-move="' + (up ? "up" : "down") + '"]');
    }
  };

  Editor.prototype.change = function (event) {
    var select = event.target;
    if (!select.classList || !select.classList.contains("plan-tool")) return;
    var index = this.indexOf(select);
    var step = this.steps[index];
    var tool = this.byName[select.value];
    var kept = {};
    if (tool) {
      tool.inputs.forEach(function (spec) {
        if (step.args[spec.name] !== undefined) kept[spec.name] = step.args[spec.name];
      });
    }
    step.name = select.value;
    step.args = kept;
    this.render();
    this.sync();
    var again = this.list.querySelector('.plan-step[data-index="' + index + '"] .plan-arg-value') ||
      this.list.querySelector('.plan-step[data-index="' + index + '"] .plan-tool');
    if (again) again.focus();
  };

  Editor.prototype.input = function (event) {
    var input = event.target;
    if (!input.hasAttribute || !input.hasAttribute("data-arg-input")) return;
    var step = this.steps[this.indexOf(input)];
    var name = input.getAttribute("data-arg-input");
    var value = input.value;
    if (value === "") {
      delete step.args[name];
    } else if (input.getAttribute("data-json")) {
      try { step.args[name] = JSON.parse(value); } catch (e) { step.args[name] = value; }
    } else {
      step.args[name] = value;
    }
    this.sync();
  };

  var editors = [];

  function start() {
    document.querySelectorAll(FORM).forEach(function (form) {
      var editor = new Editor(form);
      editor.start();
      editors.push(editor);
    });
  }

  // New findings: place them next to their steps.
  document.addEventListener("htmx:afterSettle", function (event) {
    var target = event.detail && event.detail.target;
    if (!target || target.id !== "plan-findings") return;
    editors.forEach(function (editor) { if (editor.steps) editor.place(); });
  });

  // Alt+Up / Alt+Down in a step: move it, keeping the focus in the same field.
  function moveFocused(event, form) {
    var editor = editors.filter(function (e) { return e.form === form; })[0];
    if (!editor || !editor.steps) return false;
    var index = editor.indexOf(event.target);
    if (index < 0) return false;
    var to = index + (event.key === "ArrowUp" ? -1 : 1);
    if (to < 0 || to >= editor.steps.length) return false;
    var arg = event.target.getAttribute("data-arg-input");
    editor.move(index, to - index, arg ? '[data-arg-input="' + CSS.escape(arg) + '"]' : ".plan-tool");
  }

  if (window.Benchwright && window.Benchwright.shortcuts) {
    window.Benchwright.shortcuts({
      "ctrl+s": function (event, form) {
        var save = form.querySelector("[data-save]");
        if (save && !save.disabled) save.click();
      },
      "alt+n": "[data-add-step]",
      "alt+ArrowUp": moveFocused,
      "alt+ArrowDown": moveFocused,
    }, { scope: FORM, inputs: true });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
