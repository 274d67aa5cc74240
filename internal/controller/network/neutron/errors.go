package neutron

// Errors: Neutron's and Keystone's answers classified into
// network.Errors (reason, permanent, down) with messages an operator can
// act on.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
)

// classifyList classifies the error of a list request. A collection is
// never "not found": a 404 there means the endpoint is not Neutron's
// (a wrong catalog entry or endpoint override): the whole backend is
// unusable until an operator fixes it.
func classifyList(op string, err error) error {
	if code, ok := statusCode(err); ok && code == http.StatusNotFound {
		return network.Down(op, fmt.Errorf(
			"%w (a list answered 404: is the service catalog's network endpoint Neutron's?)", describe(err)))
	}
	return classify(op, err)
}

// classify turns a gophercloud error into a network.Error (or, for 404, an
// error wrapping network.ErrNotFound) with a message an operator can act on.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var reauth gophercloud.ErrUnableToReauthenticate
	var reauthPtr *gophercloud.ErrUnableToReauthenticate
	switch {
	case errors.As(err, &reauthPtr):
		reauth = *reauthPtr
		fallthrough
	case errors.As(err, &reauth):
		// Keystone refused the credentials or could not be reached: no
		// request to Neutron can succeed until that changes.
		var inner error = describe(reauth.ErrReauth)
		var e *network.Error
		if errors.As(classify(op, reauth.ErrReauth), &e) {
			inner = e.Err
		}
		err := network.Down(op, fmt.Errorf("re-authenticating to Keystone after the token expired: %w", inner))
		if code, ok := statusCode(reauth.ErrReauth); ok && code == http.StatusUnauthorized {
			// Keystone refused the credentials themselves: their owner
			// has to act (see ReasonCredentialsRefused).
			err.(*network.Error).Reason = samplecrdv1.ReasonCredentialsRefused
		}
		return err
	}

	code, ok := statusCode(err)
	if !ok {
		var opErr *net.OpError
		dial := errors.As(err, &opErr) && opErr.Op == "dial"
		if !dial && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			// The caller gave up (shutdown), or an answer was slow (a
			// busy Neutron): this request's failure, retried on its own.
			return network.Transient(op, samplecrdv1.ReasonBackendUnavailable, err)
		}
		// No connection (refused, unreachable, timed out), or one reset or
		// closed without an answer: Neutron (or the way to it) is down.
		return network.Down(op, describe(err))
	}
	msg := describe(err)
	typ := neutronType(err)
	switch {
	case code == http.StatusNotFound:
		return fmt.Errorf("%s: %w: %w", op, network.ErrNotFound, msg)
	case typ == "SubnetAllocationError":
		// The pool has no free range of the size asked for (Neutron
		// answers 500 for it): freed when subnets of it go.
		return network.Transient(op, samplecrdv1.ReasonSubnetPoolExhausted, fmt.Errorf(
			"%w (free a subnet of the pool, or ask its owner to add prefixes to it)", msg))
	case code == http.StatusServiceUnavailable && (typ == "NoNetworkAvailable" || typ == "ResourceExhausted"):
		// Neutron itself answered: what this request needs is used up
		// (no tenant network segment left), in effect a quota, while every
		// other request still works.
		return network.Transient(op, samplecrdv1.ReasonQuotaExceeded, fmt.Errorf(
			"%w (ask the cloud's operator to widen the tenant network ranges, or delete unused networks)", msg))
	case code == http.StatusServiceUnavailable && typ != "" && typ != "ServiceUnavailable":
		// Neutron itself answered, naming what failed for this request:
		// its failure, not the whole backend's.
		return network.Transient(op, samplecrdv1.ReasonBackendUnavailable, msg)
	case code == http.StatusUnauthorized || code == http.StatusBadGateway ||
		code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout:
		// Credentials refused even after re-authenticating, or nothing
		// behind the endpoint answers: the whole backend's failure.
		return network.Down(op, msg)
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return network.Transient(op, samplecrdv1.ReasonBackendUnavailable, msg)
	case code == http.StatusConflict && typ == "OverQuota":
		// Freed when other networks go, or raised by an operator: retry.
		return network.Transient(op, samplecrdv1.ReasonQuotaExceeded, fmt.Errorf(
			"%w (ask the cloud's operator to raise the project's quota, or delete unused networks)", msg))
	case code == http.StatusConflict && typ == "GatewayIpInUse":
		// A router's interface holds the gateway address: only removing
		// the router from the spec frees it.
		return network.Permanent(op, samplecrdv1.ReasonBackendRejected, fmt.Errorf(
			"%w (remove spec.router first: the interface is removed, the gateway can change, then set the router again)", msg))
	case code == http.StatusConflict && strings.HasSuffix(typ, "InUse"):
		// Something (ports of VMs) still uses the network: retry later.
		return network.Transient(op, samplecrdv1.ReasonBackendInUse, msg)
	case strings.Contains(msg.Error(), "overlaps with"):
		return network.Permanent(op, samplecrdv1.ReasonCIDROverlap, msg)
	default: // 400, 403, 409, ...
		return network.Permanent(op, samplecrdv1.ReasonBackendRejected, msg)
	}
}

func unexpectedResponse(err error) (gophercloud.ErrUnexpectedResponseCode, bool) {
	var v gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &v) {
		return v, true
	}
	var p *gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &p) && p != nil {
		return *p, true
	}
	return v, false
}

func statusCode(err error) (int, bool) {
	if r, ok := unexpectedResponse(err); ok {
		return r.Actual, true
	}
	return 0, false
}

type errorBody struct {
	NeutronError *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"NeutronError"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func neutronType(err error) string {
	r, ok := unexpectedResponse(err)
	if !ok {
		return ""
	}
	var body errorBody
	if json.Unmarshal(r.Body, &body) == nil && body.NeutronError != nil {
		return body.NeutronError.Type
	}
	return ""
}

// describe rewrites an HTTP error as "<METHOD> <URL>: <status>: <message of
// the NeutronError or Keystone error body>", keeping it wrapped. Any other
// body (a proxy's or gateway's error page) is left out: it often carries a
// request ID, and the text becomes the Network's Ready message, which must
// not change at every retry.
func describe(err error) error {
	r, ok := unexpectedResponse(err)
	if !ok {
		return err
	}
	detail := "the answer is not Neutron's (a proxy or gateway in front of it?)"
	var body errorBody
	if json.Unmarshal(r.Body, &body) == nil {
		switch {
		case body.NeutronError != nil && body.NeutronError.Message != "":
			detail = body.NeutronError.Message
			if body.NeutronError.Type != "" {
				detail = body.NeutronError.Type + ": " + detail
			}
		case body.Error != nil && body.Error.Message != "":
			detail = body.Error.Message
		}
	}
	if len(detail) > 512 {
		detail = detail[:512] + "..."
	}
	return &httpError{summary: fmt.Sprintf("%s %s: %d %s: %s", r.Method, withoutUserInfo(r.URL), r.Actual, http.StatusText(r.Actual), detail), err: err}
}

// userInfo finds the user information of a URL in a message.
var userInfo = regexp.MustCompile(`://[^/@\s]*@`)

// withoutUserInfo returns s with the user information of every URL in it
// taken out: a Keystone or Neutron URL may carry credentials (a proxy's
// basic auth in front of it), and messages become conditions and Events
// that the readers of Networks see. Go's HTTP client does the same for
// its own errors.
func withoutUserInfo(s string) string { return userInfo.ReplaceAllString(s, "://[redacted]@") }

type httpError struct {
	summary string
	err     error
}

func (e *httpError) Error() string { return e.summary }
func (e *httpError) Unwrap() error { return e.err }
