// The reference side of test/integration/log-interop.test.ts: Go's golang.org/x/mod/sumdb/note
// (Debian's golang-golang-x-mod-dev, built offline) signs and opens the notes the registry's
// TypeScript opens and signs.
//
//	main sign <signer key>   < text   prints the signed note
//	main open <verifier key> < note   prints the note's text, after "verified by <names>"
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 3 {
		fail(fmt.Errorf("usage: main sign|open <key>"))
	}
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	switch os.Args[1] {
	case "sign":
		s, err := note.NewSigner(os.Args[2])
		if err != nil {
			fail(err)
		}
		msg, err := note.Sign(&note.Note{Text: string(in)}, s)
		if err != nil {
			fail(err)
		}
		os.Stdout.Write(msg)
	case "open":
		v, err := note.NewVerifier(os.Args[2])
		if err != nil {
			fail(err)
		}
		n, err := note.Open(in, note.VerifierList(v))
		if err != nil {
			fail(err)
		}
		names := []string{}
		for _, sig := range n.Sigs {
			names = append(names, sig.Name)
		}
		fmt.Printf("verified by %s\n%s", strings.Join(names, ","), n.Text)
	default:
		fail(fmt.Errorf("unknown command %s", os.Args[1]))
	}
}
