package anonymize

import "errors"

// A node is one JSON value of a parsed line, by raw byte offsets. For a
// string, [start, end) is its content between the quotes; for an object,
// kids alternate key and value nodes; for an array, kids are the elements.
type node struct {
	kind       byte // '{', '[', '"', or 'v' for numbers and literals
	start, end int
	kids       []int32
}

// maxDepth bounds nesting: a deeper document is treated as malformed
// instead of recursing without end.
const maxDepth = 2048

var errSyntax = errors.New("json syntax")

// parser builds a flat node table over b. It checks structure, not
// content: string bytes are taken as they are (invalid UTF-8 is the
// transform's business), numbers and literals are any run of their
// characters.
type parser struct {
	b     []byte
	nodes []node
}

// parse parses b as one JSON document (white space around it allowed) and
// returns the index of its root node.
func (p *parser) parse(b []byte) (int32, error) {
	p.b = b
	p.nodes = p.nodes[:0]
	i := skipSpace(b, 0)
	root, i, err := p.value(i, 0)
	if err != nil {
		return 0, err
	}
	if skipSpace(b, i) != len(b) {
		return 0, errSyntax
	}
	return root, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func (p *parser) add(n node) int32 {
	p.nodes = append(p.nodes, n)
	return int32(len(p.nodes) - 1)
}

func (p *parser) value(i, depth int) (int32, int, error) {
	b := p.b
	if i >= len(b) || depth > maxDepth {
		return 0, i, errSyntax
	}
	switch c := b[i]; {
	case c == '"':
		end, err := stringEnd(b, i+1)
		if err != nil {
			return 0, i, err
		}
		return p.add(node{kind: '"', start: i + 1, end: end}), end + 1, nil
	case c == '{' || c == '[':
		return p.container(i, depth)
	case c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n':
		j := i
		for j < len(b) && isScalarByte(b[j]) {
			j++
		}
		if !validScalar(b[i:j]) {
			return 0, i, errSyntax
		}
		return p.add(node{kind: 'v', start: i, end: j}), j, nil
	}
	return 0, i, errSyntax
}

func (p *parser) container(i, depth int) (int32, int, error) {
	b := p.b
	open := b[i]
	closing := byte(']')
	if open == '{' {
		closing = '}'
	}
	var kids []int32
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == closing {
		return p.add(node{kind: open, start: i, end: i + 1}), i + 1, nil
	}
	for {
		if open == '{' {
			if i >= len(b) || b[i] != '"' {
				return 0, i, errSyntax
			}
			key, j, err := p.value(i, depth+1)
			if err != nil {
				return 0, j, err
			}
			kids = append(kids, key)
			i = skipSpace(b, j)
			if i >= len(b) || b[i] != ':' {
				return 0, i, errSyntax
			}
			i = skipSpace(b, i+1)
		}
		v, j, err := p.value(i, depth+1)
		if err != nil {
			return 0, j, err
		}
		kids = append(kids, v)
		i = skipSpace(b, j)
		if i >= len(b) {
			return 0, i, errSyntax
		}
		if b[i] == closing {
			return p.add(node{kind: open, start: i, end: i + 1, kids: kids}), i + 1, nil
		}
		if b[i] != ',' {
			return 0, i, errSyntax
		}
		i = skipSpace(b, i+1)
	}
}

// stringEnd returns the index of the closing quote of the string whose
// content starts at i. Raw control characters make the line invalid, as
// they do for every JSON decoder.
func stringEnd(b []byte, i int) (int, error) {
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			return i, nil
		case c == '\\':
			if i+1 >= len(b) {
				return 0, errSyntax
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
					return 0, errSyntax
				}
				i += 6
			default:
				return 0, errSyntax
			}
		case c < 0x20:
			return 0, errSyntax
		default:
			i++
		}
	}
	return 0, errSyntax
}

func isHex4(h []byte) bool {
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func isScalarByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-' || c == '+' || c == '.' || c == 'E'
}

// validScalar accepts the literals and anything number-shaped; the exact
// number grammar is the decoder's concern, and a bad number is kept as it
// is (it carries no text).
func validScalar(s []byte) bool {
	switch string(s) {
	case "true", "false", "null":
		return true
	}
	if len(s) == 0 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			return false
		}
	}
	return true
}
