package indepcount

import "sort"

// byLanguage lists, per language label, the file extensions the exporter's
// docs name for it (written here from the documented rule, not from
// mapping/): the lines-of-code and edit-decision counts are keyed by it.
var byLanguage = map[string][]string{
	"go":               {"go"},
	"python":           {"py", "pyi"},
	"jupyter":          {"ipynb"},
	"javascript":       {"js", "mjs", "cjs", "jsx"},
	"typescript":       {"ts", "tsx", "mts", "cts"},
	"java":             {"java"},
	"kotlin":           {"kt", "kts"},
	"scala":            {"scala"},
	"groovy":           {"groovy", "gradle"},
	"rust":             {"rs"},
	"c":                {"c", "h"},
	"cpp":              {"cc", "cpp", "cxx", "hpp", "hh"},
	"csharp":           {"cs"},
	"fsharp":           {"fs"},
	"swift":            {"swift"},
	"objective-c":      {"m", "mm"},
	"ruby":             {"rb"},
	"php":              {"php"},
	"perl":             {"pl"},
	"lua":              {"lua"},
	"r":                {"r"},
	"julia":            {"jl"},
	"dart":             {"dart"},
	"elixir":           {"ex", "exs"},
	"erlang":           {"erl"},
	"haskell":          {"hs"},
	"clojure":          {"clj"},
	"ocaml":            {"ml"},
	"zig":              {"zig"},
	"nim":              {"nim"},
	"solidity":         {"sol"},
	"shell":            {"sh", "bash", "zsh", "fish"},
	"powershell":       {"ps1"},
	"batch":            {"bat", "cmd"},
	"sql":              {"sql"},
	"html":             {"html", "htm"},
	"css":              {"css", "scss", "sass", "less"},
	"vue":              {"vue"},
	"svelte":           {"svelte"},
	"astro":            {"astro"},
	"markdown":         {"md", "mdx", "markdown"},
	"restructuredtext": {"rst"},
	"text":             {"txt"},
	"latex":            {"tex"},
	"json":             {"json", "jsonc", "jsonl"},
	"yaml":             {"yaml", "yml"},
	"toml":             {"toml"},
	"xml":              {"xml"},
	"ini":              {"ini", "cfg"},
	"config":           {"conf", "env", "properties"},
	"terraform":        {"tf", "hcl"},
	"protobuf":         {"proto"},
	"graphql":          {"graphql", "gql"},
	"dockerfile":       {"dockerfile"},
	"makefile":         {"makefile"},
	"cmake":            {"cmake"},
	"nix":              {"nix"},
	"csv":              {"csv"},
	"svg":              {"svg"},
}

// Language is the language label of a file extension: its entry in
// byLanguage, "none" for no extension, "other" for any other.
func Language(ext string) string {
	if ext == "" {
		return "none"
	}
	for lang, exts := range byLanguage {
		for _, e := range exts {
			if e == ext {
				return lang
			}
		}
	}
	return "other"
}

// Extensions are all extensions byLanguage names, sorted.
func Extensions() []string {
	var all []string
	for _, exts := range byLanguage {
		all = append(all, exts...)
	}
	sort.Strings(all)
	return all
}
