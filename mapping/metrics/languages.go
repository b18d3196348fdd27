package metrics

import "slices"

// languages maps file extensions (transcript.ExtOf) to the language label
// of the lines-of-code and edit-decision series: a fixed table, so the
// label stays bounded; any other extension is "other", none is "none".
var languages = map[string]string{
	"go": "go", "py": "python", "pyi": "python", "ipynb": "jupyter",
	"js": "javascript", "mjs": "javascript", "cjs": "javascript", "jsx": "javascript",
	"ts": "typescript", "tsx": "typescript", "mts": "typescript", "cts": "typescript",
	"java": "java", "kt": "kotlin", "kts": "kotlin", "scala": "scala", "groovy": "groovy", "gradle": "groovy",
	"rs": "rust", "c": "c", "h": "c", "cc": "cpp", "cpp": "cpp", "cxx": "cpp", "hpp": "cpp", "hh": "cpp",
	"cs": "csharp", "fs": "fsharp", "swift": "swift", "m": "objective-c", "mm": "objective-c",
	"rb": "ruby", "php": "php", "pl": "perl", "lua": "lua", "r": "r", "jl": "julia", "dart": "dart",
	"ex": "elixir", "exs": "elixir", "erl": "erlang", "hs": "haskell", "clj": "clojure", "ml": "ocaml",
	"zig": "zig", "nim": "nim", "sol": "solidity",
	"sh": "shell", "bash": "shell", "zsh": "shell", "fish": "shell", "ps1": "powershell", "bat": "batch", "cmd": "batch",
	"sql": "sql", "html": "html", "htm": "html", "css": "css", "scss": "css", "sass": "css", "less": "css",
	"vue": "vue", "svelte": "svelte", "astro": "astro",
	"md": "markdown", "mdx": "markdown", "markdown": "markdown", "rst": "restructuredtext", "txt": "text", "tex": "latex",
	"json": "json", "jsonc": "json", "jsonl": "json", "yaml": "yaml", "yml": "yaml", "toml": "toml", "xml": "xml",
	"ini": "ini", "cfg": "ini", "conf": "config", "env": "config", "properties": "config",
	"tf": "terraform", "hcl": "terraform", "proto": "protobuf", "graphql": "graphql", "gql": "graphql",
	"dockerfile": "dockerfile", "makefile": "makefile", "cmake": "cmake", "nix": "nix",
	"csv": "csv", "svg": "svg",
}

// LanguageOf is the language label of a file extension.
func LanguageOf(ext string) string {
	if ext == "" {
		return "none"
	}
	if l, ok := languages[ext]; ok {
		return l
	}
	return OtherValue
}

// Extensions are the extensions the language table names, sorted.
func Extensions() []string {
	exts := make([]string, 0, len(languages))
	for e := range languages {
		exts = append(exts, e)
	}
	slices.Sort(exts)
	return exts
}
