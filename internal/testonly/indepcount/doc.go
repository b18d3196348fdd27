// Package indepcount is a test-only independent count; plain encoding/json over map[string]any.
//
// It re-derives the expected metric totals of a Claude config dir with a
// deliberately simple reader, written separately from the production
// decoder, so that tests can compare the two. Speed is not a goal: every
// line is decoded with encoding/json into map[string]any and the rules are
// applied in the most direct way. See Count for the rules.
package indepcount
