package canonjson

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBytes(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1,"a":"x<y"}`, `{"a":"x<y","b":1}`},
		{` { "a" : [ 1.50, 8e-1, 1E3, -0.0 ] } `, `{"a":[1.5,0.8,1000,-0]}`},
		{`{"n":1e21,"m":1e-7}`, `{"m":1e-7,"n":1e+21}`},
		{`{"a":"\u0041"}`, `{"a":"A"}`},
		{`{"o":"FAIL","o":"PASS"}`, `{"o":"PASS"}`},
	}
	for _, tt := range tests {
		got, err := Bytes([]byte(tt.in))
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, string(got), tt.in)
	}
	_, err := Bytes([]byte(`{"a":1} {}`))
	assert.Error(t, err, "one document")
	assert.Equal(t, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Digest(nil))
}
