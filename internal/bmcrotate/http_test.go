package bmcrotate_test

import (
	"net/http"
	"strings"
	"time"
)

var httpClient = &http.Client{Timeout: 10 * time.Second}

func newPatch(url, body string) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodPatch, url, strings.NewReader(body))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, err
}
