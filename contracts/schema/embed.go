// Package schema embeds the seam contract schema (schema.cue) so that the
// binaries bind it into every contract directory they load.
package schema

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

//go:embed *.cue
var files embed.FS

// ImportPath is where user contracts may import the schema from.
const ImportPath = "seam.dev/schema"

// Version is the schema's version; it changes when the meaning of a
// contract can change.
const Version = "v1alpha1"

// Files returns the schema's CUE files by name.
func Files() map[string][]byte {
	out := map[string][]byte{}
	entries, _ := files.ReadDir(".")
	for _, e := range entries {
		b, _ := files.ReadFile(e.Name())
		out[e.Name()] = b
	}
	return out
}

// Digest is the sha256 of the schema files, in name order.
func Digest() string {
	h := sha256.New()
	entries, _ := files.ReadDir(".")
	for _, e := range entries {
		b, _ := files.ReadFile(e.Name())
		h.Write([]byte(e.Name()))
		h.Write(b)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Bind is added to every contract package: it makes `site` a #Site and
// every boundary a #Boundary named by its key.
const Bind = `import seamschema "seam.dev/schema"

site: seamschema.#Site
boundaries: [ID=string]: seamschema.#Boundary & {id: ID}
`

// PowerSmoothingGPUs is the schema's #PowerSmoothingGPUs: the GPU models
// NVML's power smoothing supports, read from the one table with its
// source.
var PowerSmoothingGPUs = sync.OnceValue(func() []string {
	b, _ := files.ReadFile("schema.cue")
	v := cuecontext.New().CompileBytes(b).LookupPath(cue.ParsePath("#PowerSmoothingGPUs"))
	var out []string
	if err := v.Decode(&out); err != nil {
		panic("contracts/schema: #PowerSmoothingGPUs: " + err.Error())
	}
	return out
})
