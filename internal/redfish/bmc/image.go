package bmc

// The simulated firmware image, and how the BMC fetches and verifies
// one: what SimpleUpdate and the multipart push share.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// imageFormat names the simulator's firmware image format.
const imageFormat = "seam-simulated-firmware/1"

// Image is what a simulated firmware image says it is. The format: one
// line of JSON, {"format": "seam-simulated-firmware/1", "component":
// "bmc", "version": "1.2.3"}, a newline, then any bytes (padding to a
// realistic size; a digest of the image covers them). Component is a
// FirmwareInventory member's SoftwareId (bios, bmc, gpu, …): a BMC
// refuses an image for another component.
type Image struct {
	Component string `json:"component"`
	Version   string `json:"version"`
}

type imageHeader struct {
	Format string `json:"format"`
	Image
}

// MakeImage is a simulated firmware image of component at version,
// padded with zeros to size bytes (if it is shorter).
func MakeImage(component, version string, size int) []byte {
	head, _ := json.Marshal(imageHeader{Format: imageFormat, Image: Image{Component: component, Version: version}})
	out := append(head, '\n')
	if pad := size - len(out); pad > 0 {
		out = append(out, make([]byte, pad)...)
	}
	return out
}

// ReadImage reads a simulated firmware image's header.
func ReadImage(b []byte) (Image, error) {
	n := bytes.IndexByte(b[:min(len(b), 4096)], '\n')
	if n < 0 {
		return Image{}, errors.New("not a simulated firmware image: no header line in its first 4096 bytes")
	}
	var h imageHeader
	if err := json.Unmarshal(b[:n], &h); err != nil {
		return Image{}, fmt.Errorf("not a simulated firmware image: its header: %w", err)
	}
	switch {
	case h.Format != imageFormat:
		return Image{}, fmt.Errorf("not a simulated firmware image: format %q, want %q", h.Format, imageFormat)
	case h.Component == "" || h.Version == "":
		return Image{}, errors.New("not a simulated firmware image: its header names no component or no version")
	}
	return h.Image, nil
}

// imageURL is where SimpleUpdate fetches from: ImageURI's own scheme
// (http or https), else TransferProtocol's (HTTP by default).
func imageURL(w http.ResponseWriter, raw, proto string) (*url.URL, bool) {
	if proto != "" && proto != "HTTP" && proto != "HTTPS" {
		writeMsg(w, http.StatusBadRequest, withResolution(regMsg("Base.1.5.0.PropertyValueNotInList", proto, "TransferProtocol"),
			"This BMC fetches images over HTTP or HTTPS."))
		return nil, false
	}
	if !strings.Contains(raw, "://") {
		raw = strings.ToLower(cmp.Or(proto, "HTTP")) + "://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		scheme := ""
		if u != nil {
			scheme = u.Scheme
		}
		writeMsg(w, http.StatusBadRequest, withResolution(regMsg("Base.1.5.0.PropertyValueNotInList", scheme, "ImageURI"),
			"ImageURI must be an http or https URL with a host."))
		return nil, false
	}
	return u, true
}

// shown is a URL fit for a message: no credentials, no query, and of
// the path only its first and last elements (a one-time token, in the
// query or in the path between them as seam's image server puts it,
// stays out of the BMC's tasks and logs).
func shown(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawPath = nil, "", false, "", ""
	elems := strings.Split(strings.TrimPrefix(c.Path, "/"), "/")
	if len(elems) <= 2 {
		return c.String()
	}
	c.Path = ""
	return c.String() + "/" + elems[0] + "/…/" + elems[len(elems)-1]
}

// fetch GETs an image through the configured client; failure is the
// message of what went wrong (nil: data is the image).
func (b *BMC) fetch(ctx context.Context, u *url.URL, user, pass string) ([]byte, map[string]any) {
	at := shown(u)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, withResolution(regMsg("Base.1.5.0.CouldNotEstablishConnection", at), err.Error())
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := b.cfg.ImageClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the URL, token and all
		}
		return nil, withResolution(regMsg("Base.1.5.0.CouldNotEstablishConnection", at), fmt.Sprintf("GET %s: %v", at, err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, regMsg("Base.1.5.0.ResourceAtUriUnauthorized", at, resp.Status)
	case resp.StatusCode == http.StatusNotFound:
		return nil, regMsg("Base.1.5.0.ResourceMissingAtURI", at)
	case resp.StatusCode/100 != 2:
		return nil, withResolution(regMsg("Base.1.5.0.GeneralError"), fmt.Sprintf("GET %s: %s", at, resp.Status))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, b.cfg.MaxImageSize+1))
	switch {
	case err != nil:
		return nil, withResolution(regMsg("Base.1.5.0.CouldNotEstablishConnection", at), fmt.Sprintf("GET %s: reading the image: %v", at, err))
	case int64(len(data)) > b.cfg.MaxImageSize:
		return nil, withResolution(regMsg("Base.1.5.0.GeneralError"), fmt.Sprintf("The image at %s is larger than MaxImageSizeBytes (%d).", at, b.cfg.MaxImageSize))
	}
	return data, nil
}

// verify checks an image as the component would, answering 400
// VerificationFailed when it is refused: not an image, an image for
// another component, or (FaultImageRefused) its signature not
// accepted. With no targets given, they are the members of the
// image's component.
func (b *BMC) verify(w http.ResponseWriter, t *static, data []byte, name string, targets []fwMember) (Image, []fwMember, bool) {
	at := b.cfg.Name
	if len(targets) > 0 {
		at = targets[0].id
	}
	if b.Fault() == FaultImageRefused {
		writeMsg(w, http.StatusBadRequest, withResolution(regMsg("Update.1.0.2.VerificationFailed", name, at),
			"The component did not accept the image's signature; the image was not installed."))
		return Image{}, nil, false
	}
	img, err := ReadImage(data)
	if err != nil {
		writeMsg(w, http.StatusBadRequest, withResolution(regMsg("Base.1.5.0.ResourceAtUriInUnknownFormat", name), err.Error()))
		return Image{}, nil, false
	}
	if len(targets) == 0 {
		for _, uri := range slices.Sorted(maps.Keys(t.firmware)) {
			if m := t.firmware[uri]; m.component == img.Component {
				targets = append(targets, m)
			}
		}
		if len(targets) == 0 {
			writeMsg(w, http.StatusBadRequest, withResolution(regMsg("Update.1.0.2.VerificationFailed", name, at),
				fmt.Sprintf("The image is %s firmware; no component of this BMC takes it.", img.Component)))
			return Image{}, nil, false
		}
	}
	for _, m := range targets {
		if m.component != img.Component {
			writeMsg(w, http.StatusBadRequest, withResolution(regMsg("Update.1.0.2.VerificationFailed", name, m.id),
				fmt.Sprintf("The image is %s firmware; %s takes %s firmware.", img.Component, m.id, m.component)))
			return Image{}, nil, false
		}
	}
	return img, targets, true
}
