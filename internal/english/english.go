// Package english joins words as the project's messages say them in
// English: "a, b or c".
package english

import "strings"

// Or joins ws as "a, b or c": "a" for one, "" for none.
func Or(ws ...string) string { return join(ws, "or") }

// And joins ws as "a, b and c": "a" for one, "" for none.
func And(ws ...string) string { return join(ws, "and") }

func join(ws []string, conj string) string {
	if len(ws) < 2 {
		return strings.Join(ws, "")
	}
	return strings.Join(ws[:len(ws)-1], ", ") + " " + conj + " " + ws[len(ws)-1]
}
