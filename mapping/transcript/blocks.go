package transcript

// Content blocks: text, thinking, tool_use (with what the counters read of
// each tool's input: edit files and line counts, shell facts, Task types)
// and tool_result blocks.

import (
	"bytes"
	"strings"
)

// block decodes one content block. Keys can come in any order, so the
// fields are located first and interpreted once the type is known.
func (d *Decoder) block(b []byte, v int, m *Message) (int, error) {
	var typ, id, name, toolUseID, text, thinking span
	var input, content span
	isError := false
	end, err := objectFields(b, v, func(key []byte, v int) (int, error) {
		strSpan := func(s *span) (int, error) {
			if v < len(b) && b[v] == '"' {
				raw, esc, next, err := readString(b, v)
				if err != nil {
					return 0, err
				}
				*s = span{start: v + 1, end: v + 1 + len(raw), esc: esc, set: true}
				return next, nil
			}
			return skipValue(b, v)
		}
		// longSpan locates a string that may be huge (text, thinking)
		// without scanning it for escapes: only its head is ever read.
		longSpan := func(s *span) (int, error) {
			if v < len(b) && b[v] == '"' {
				raw, next, err := readLong(b, v)
				if err != nil {
					return 0, err
				}
				*s = span{start: v + 1, end: v + 1 + len(raw), set: true}
				return next, nil
			}
			return skipValue(b, v)
		}
		valSpan := func(s *span) (int, error) {
			next, err := skipValue(b, v)
			if err != nil {
				return 0, err
			}
			*s = span{start: v, end: next, set: true}
			return next, nil
		}
		switch string(key) {
		case "type":
			return strSpan(&typ)
		case "id":
			return strSpan(&id)
		case "name":
			return strSpan(&name)
		case "tool_use_id":
			return strSpan(&toolUseID)
		case "text":
			return longSpan(&text)
		case "thinking":
			return longSpan(&thinking)
		case "is_error":
			var next int
			var err error
			isError, next, err = readBool(b, v)
			return next, err
		case "input":
			return valSpan(&input)
		case "content":
			return valSpan(&content)
		}
		return skipValue(b, v)
	})
	if err != nil {
		return 0, err
	}
	typRaw := typ.raw(b)
	if typ.esc {
		typRaw = appendUnescaped(nil, typRaw, 64)
	}
	switch string(typRaw) {
	case "text":
		m.TextBlocks++
		if m.TextBlocks == 1 && text.set {
			m.TextHead, m.TextHeadCut = headOf(text.raw(b), TextHeadMax)
		}
		if d.opts.KeepText && text.set {
			m.Text = appendCapped(m.Text, text.raw(b), d.opts.MaxKeepBytes)
		}
	case "thinking", "redacted_thinking":
		m.ThinkingBlocks++
		if d.opts.KeepThinking && thinking.set {
			m.Thinking = appendCapped(m.Thinking, thinking.raw(b), d.opts.MaxKeepBytes)
		}
	case "tool_use", "server_tool_use":
		tu := ToolUse{Server: string(typRaw) == "server_tool_use"}
		if id.set {
			tu.ID = d.id(id.raw(b), id.esc)
		}
		if name.set {
			tu.Name = d.internBytes(name.raw(b), name.esc)
		}
		if input.set {
			switch tu.Name {
			case "Task", "Agent":
				d.taskInput(b, input.start, &tu)
			case "Edit", "MultiEdit", "Write", "NotebookEdit":
				d.editInput(b, input.start, &tu)
			case "Bash":
				d.bashInput(b, input.start, &tu)
			}
			if d.opts.KeepToolIO {
				tu.Input = capString(string(input.raw(b)), d.opts.MaxKeepBytes)
			}
		}
		m.ToolUses = append(m.ToolUses, tu)
	case "tool_result":
		tr := ToolResult{IsError: isError}
		if toolUseID.set {
			tr.ToolUseID = d.id(toolUseID.raw(b), toolUseID.esc)
		}
		if content.set {
			c := content.raw(b)
			tr.Rejected = bytes.Contains(c[:min(len(c), 256)], []byte(RejectionMarker))
		}
		if d.opts.KeepToolIO && content.set {
			c := content.raw(b)
			if len(c) > 0 && c[0] == '"' {
				tr.Content, _ = head(c[1:len(c)-1], true, d.opts.MaxKeepBytes)
			} else {
				tr.Content = capString(string(c), d.opts.MaxKeepBytes)
			}
		}
		m.ToolResults = append(m.ToolResults, tr)
	default:
		if !bytes.HasSuffix(typRaw, []byte("_tool_result")) || !toolUseID.set {
			m.OtherBlocks++
			break
		}
		// A server-side tool's result, inside the assistant stream
		// (web_search_tool_result, web_fetch_tool_result,
		// advisor_tool_result, …): it answers its server_tool_use. An
		// error is content of a type ending in _error.
		tr := ToolResult{InStream: true, ToolUseID: d.id(toolUseID.raw(b), toolUseID.esc)}
		if content.set {
			tr.IsError = resultError(content.raw(b))
		}
		m.ToolResults = append(m.ToolResults, tr)
	}
	return end, nil
}

// resultError says a server tool result's content is an error: an object
// whose type ends in _error (web_search_tool_result_error, …).
func resultError(b []byte) bool {
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	isErr := false
	_, _ = objectFields(b, 0, func(key []byte, v int) (int, error) {
		if string(key) == "type" && v < len(b) && b[v] == '"' {
			raw, _, next, err := readString(b, v)
			if err == nil {
				isErr = bytes.HasSuffix(raw, []byte("_error"))
			}
			return next, err
		}
		return skipValue(b, v)
	})
	return isErr
}

// editInput reads an edit tool's input: the extension of the file it
// names, a NotebookEdit's new_source line count, and the InputLines of an
// Edit, MultiEdit or Write.
func (d *Decoder) editInput(b []byte, v int, tu *ToolUse) {
	if v >= len(b) || b[v] != '{' {
		return
	}
	deleted := false
	var pair [2]span // an Edit's old_string, new_string
	_, _ = objectFields(b, v, func(key []byte, v int) (int, error) {
		if next, ok, err := d.editInputLines(b, key, v, tu, &pair); ok {
			return next, err
		}
		switch string(key) {
		case "file_path", "notebook_path":
			if v < len(b) && b[v] == '"' {
				raw, esc, next, err := readString(b, v)
				if err == nil {
					if esc {
						raw = appendUnescaped(nil, raw, 4096)
					}
					tu.Ext = d.internString(ExtOf(raw))
				}
				return next, err
			}
		case "new_source":
			if v < len(b) && b[v] == '"' {
				raw, next, err := readLong(b, v)
				if err == nil {
					tu.NotebookLines = countLines(raw)
				}
				return next, err
			}
		case "edit_mode":
			if v < len(b) && b[v] == '"' {
				raw, _, next, err := readString(b, v)
				deleted = err == nil && string(raw) == "delete"
				return next, err
			}
		}
		return skipValue(b, v)
	})
	if deleted {
		tu.NotebookLines = 0
	}
	d.finishEdit(b, tu, &pair)
}

// MaxShellCommand bounds the part of a shell command read for ShellFacts.
const MaxShellCommand = 64 << 10

// bashInput reads what a Bash call's command does.
func (d *Decoder) bashInput(b []byte, v int, tu *ToolUse) {
	if v >= len(b) || b[v] != '{' {
		return
	}
	_, _ = objectFields(b, v, func(key []byte, v int) (int, error) {
		if string(key) == "command" && v < len(b) && b[v] == '"' {
			raw, esc, next, err := readString(b, v)
			// Most commands neither commit nor open a pull request: skip
			// unescaping and splitting them.
			if err == nil && (bytes.Contains(raw, []byte("commit")) || bytes.Contains(raw, []byte("create"))) {
				if esc || len(raw) > MaxShellCommand {
					raw = appendUnescaped(nil, raw, MaxShellCommand)
				}
				tu.Shell = ShellFactsOf(string(raw))
			}
			return next, err
		}
		return skipValue(b, v)
	})
}

// ExtOf is the lower-case extension of a file path written on any OS
// ("dockerfile" and "makefile" for files so named; "" for none, or for
// one longer than 16 bytes).
func ExtOf(path []byte) string {
	name := path
	if i := bytes.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	lower := strings.ToLower(string(name))
	switch {
	case lower == "dockerfile" || strings.HasPrefix(lower, "dockerfile."):
		return "dockerfile"
	case lower == "makefile" || lower == "gnumakefile":
		return "makefile"
	}
	i := strings.LastIndexByte(lower, '.')
	if i < 0 || i == len(lower)-1 || len(lower)-i-1 > 16 {
		return ""
	}
	return lower[i+1:]
}

// taskInput reads subagent_type, description and run_in_background from a
// Task/Agent input.
func (d *Decoder) taskInput(b []byte, v int, tu *ToolUse) {
	if v >= len(b) || b[v] != '{' {
		return
	}
	_, _ = objectFields(b, v, func(key []byte, v int) (int, error) {
		switch string(key) {
		case "subagent_type":
			s, next, err := d.str(b, v, true)
			tu.SubagentType = s
			return next, err
		case "run_in_background":
			if v+4 <= len(b) && string(b[v:v+4]) == "true" {
				tu.Background = true
			}
		case "description":
			if v < len(b) && b[v] == '"' {
				raw, esc, next, err := readString(b, v)
				if err == nil {
					tu.Description, _ = head(raw, esc, 256)
				}
				return next, err
			}
		}
		return skipValue(b, v)
	})
}
