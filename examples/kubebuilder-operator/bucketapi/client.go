/*
Copyright 2026 The Teardown Authors.
SPDX-License-Identifier: Apache-2.0
*/

package bucketapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// ErrNotFound is returned by Client.Delete when the bucket does not exist.
var ErrNotFound = errors.New("bucket not found")

// Client calls a bucket API.
type Client struct {
	baseURL string
	http    *http.Client
}

// NewClient returns a client for the API at baseURL. A nil hc uses
// http.DefaultClient.
func NewClient(baseURL string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{baseURL: strings.TrimSuffix(baseURL, "/"), http: hc}
}

// Create creates bucket name if it does not exist, and reports whether this
// call created it.
func (c *Client) Create(ctx context.Context, name string) (bool, error) {
	code, err := c.do(ctx, http.MethodPut, name, http.StatusCreated, http.StatusOK)
	return code == http.StatusCreated, err
}

// Delete deletes bucket name. It returns ErrNotFound if the bucket does not
// exist.
func (c *Client) Delete(ctx context.Context, name string) error {
	code, err := c.do(ctx, http.MethodDelete, name, http.StatusNoContent, http.StatusOK, http.StatusNotFound)
	if err == nil && code == http.StatusNotFound {
		return ErrNotFound
	}
	return err
}

// Exists reports whether bucket name exists.
func (c *Client) Exists(ctx context.Context, name string) (bool, error) {
	code, err := c.do(ctx, http.MethodGet, name, http.StatusOK, http.StatusNotFound)
	return code == http.StatusOK, err
}

// do sends one request and returns its status code, or an error if the code
// is not one of want.
func (c *Client) do(ctx context.Context, method, name string, want ...int) (int, error) {
	u := c.baseURL + "/buckets/" + url.PathEscape(name)
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return 0, fmt.Errorf("building the request: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	for _, w := range want {
		if resp.StatusCode == w {
			return resp.StatusCode, nil
		}
	}
	return resp.StatusCode, fmt.Errorf("%s %s: %s: %s", method, u, resp.Status, strings.TrimSpace(string(body)))
}
