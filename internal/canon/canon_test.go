package canon

import (
	"testing"

	"cuelang.org/go/cue/cuecontext"
	"github.com/stretchr/testify/require"
)

func TestCanonicalIgnoresFormattingKeepsMeaning(t *testing.T) {
	ctx := cuecontext.New()
	a := ctx.CompileString(`b: 130.0, a: "x>y" // comment
c: [1.5e3, 0.10]`)
	b := ctx.CompileString(`
a: "x>y"
c: [1500, 0.1]
b: 130`)
	ja, err := JSON(a)
	require.NoError(t, err)
	jb, err := JSON(b)
	require.NoError(t, err)
	require.Equal(t, `{"a":"x>y","b":130,"c":[1500,0.1]}`, string(ja))
	require.Equal(t, string(ja), string(jb))

	changed := ctx.CompileString(`a: "x>y", b: 131, c: [1500, 0.1]`)
	da, _ := Digest(a)
	dc, _ := Digest(changed)
	require.NotEqual(t, da, dc)
}

func TestIncompleteValueIsAnError(t *testing.T) {
	v := cuecontext.New().CompileString(`a: int`)
	_, err := JSON(v)
	require.Error(t, err)
}
