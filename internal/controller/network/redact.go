package network

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/types"
)

// RedactError returns err with its message rewritten by redact, keeping
// what the controller decides on: an *Error's Op, Reason, Permanent and
// Down, and whether it wraps ErrNotFound. Nothing of the original message
// is reachable from the result (no Unwrap to it), so no later formatting
// of the chain can quote what redact removed.
func RedactError(err error, redact func(string) string) error {
	if err == nil || redact == nil {
		return err
	}
	leaf := &redacted{msg: redact(err.Error()), notFound: errors.Is(err, ErrNotFound)}
	var e *Error
	if !errors.As(err, &e) {
		return leaf
	}
	// The *Error's own Op is part of the message already: the leaf holds
	// it all.
	return &Error{Reason: e.Reason, Permanent: e.Permanent, Down: e.Down, Err: leaf}
}

// redacted is an error message with the secrets taken out.
type redacted struct {
	msg      string
	notFound bool
}

func (e *redacted) Error() string { return e.msg }

// Is keeps IsNotFound true for what wrapped ErrNotFound.
func (e *redacted) Is(target error) bool { return e.notFound && target == ErrNotFound }

// Redacting returns b with every error it returns passed through
// RedactError: the backend of a Network's own credentials, whose errors
// may quote its Secret (Keystone's URL, a user or project name), which
// become conditions, Events and log lines.
func Redacting(b Backend, redact func(string) string) Backend {
	return &redactingBackend{b: b, redact: redact}
}

type redactingBackend struct {
	b      Backend
	redact func(string) string
}

func (r *redactingBackend) err(err error) error { return RedactError(err, r.redact) }

func (r *redactingBackend) Get(ctx context.Context, uid types.UID) (*Network, error) {
	n, err := r.b.Get(ctx, uid)
	return n, r.err(err)
}

func (r *redactingBackend) Create(ctx context.Context, desired Network) (*Network, error) {
	n, err := r.b.Create(ctx, desired)
	return n, r.err(err)
}

func (r *redactingBackend) CreateNew(ctx context.Context, desired Network) (*Network, error) {
	n, err := r.b.CreateNew(ctx, desired)
	return n, r.err(err)
}

func (r *redactingBackend) UpdateGateway(ctx context.Context, cur Network, gateway string) (*Network, error) {
	n, err := r.b.UpdateGateway(ctx, cur, gateway)
	return n, r.err(err)
}

func (r *redactingBackend) Update(ctx context.Context, cur, desired Network) (*Network, error) {
	n, err := r.b.Update(ctx, cur, desired)
	return n, r.err(err)
}

func (r *redactingBackend) Delete(ctx context.Context, n Network) error {
	return r.err(r.b.Delete(ctx, n))
}

func (r *redactingBackend) List(ctx context.Context) ([]Network, error) {
	nets, err := r.b.List(ctx)
	return nets, r.err(err)
}

func (r *redactingBackend) Import(ctx context.Context, desired Network, ref Ref, adopt bool) (*Network, error) {
	n, err := r.b.Import(ctx, desired, ref, adopt)
	return n, r.err(err)
}

func (r *redactingBackend) Detach(ctx context.Context, n Network) error {
	return r.err(r.b.Detach(ctx, n))
}

func (r *redactingBackend) Observe(ctx context.Context, want []Network) ([]Network, error) {
	nets, err := r.b.Observe(ctx, want)
	return nets, r.err(err)
}

func (r *redactingBackend) Project() string { return r.b.Project() }
