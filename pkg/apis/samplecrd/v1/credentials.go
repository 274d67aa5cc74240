package v1

import (
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CloudCredentialsRef names the OpenStack credentials a Network is
// reconciled with: the entry cloudName of the clouds.yaml held by the key
// clouds.yaml of the Secret secretName, in the Network's own namespace
// (never another's). The manager reads it only when it runs with
// --network-credentials-from-secrets.
type CloudCredentialsRef struct {
	// SecretName is the name of a Secret in the Network's namespace whose
	// key clouds.yaml holds a clouds.yaml.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SecretName string `json:"secretName"`

	// CloudName is the entry of that clouds.yaml's clouds: to use.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	CloudName string `json:"cloudName"`
}

// CloudCredentialsKey is the key of a credentials Secret that holds
// clouds.yaml.
const CloudCredentialsKey = "clouds.yaml"

// More reasons of the Ready condition: a Network's own credentials
// (spec.cloudCredentialsRef).
const (
	// ReasonCredentialsNotEnabled (Ready=False, permanent): the Network
	// names credentials, but the manager does not read Secrets (it runs
	// without --network-credentials-from-secrets); nothing is created with
	// the manager's own credentials instead. Enable the flag (the kustomize
	// Component config/network-credentials or the chart's
	// network.credentialsFromSecrets) or remove spec.cloudCredentialsRef.
	ReasonCredentialsNotEnabled = "CredentialsNotEnabled"
	// ReasonCredentialsNotFound (Ready=False, retried every
	// credentials TTL): the Secret, its clouds.yaml key or the cloud entry
	// is missing; create or fix it in the Network's namespace.
	ReasonCredentialsNotFound = "CredentialsNotFound"
	// ReasonCredentialsInvalid (Ready=False, retried every credentials
	// TTL): the clouds.yaml does not parse, or its cloud entry lacks what
	// authentication needs, or names files on the manager's disk; fix the
	// Secret.
	ReasonCredentialsInvalid = "CredentialsInvalid"
	// ReasonCredentialsRefused (Ready=False, probed with backoff): Keystone
	// refused the cloud entry's credentials (a wrong or changed password, a
	// revoked user or application credential, or a user without a role on
	// the project); every Network using that cloud entry waits, and no
	// other. Fix the Secret or the user in Keystone.
	ReasonCredentialsRefused = "CredentialsRefused"
	// ReasonCredentialsProjectChanged (Ready=False, looked at again every
	// permanent retry or on an edit): the Network's credentials now act in
	// another project than the one it is bound to (status.projectID), say
	// its Secret was pointed at another project. Nothing is created or
	// changed there; the backend network stays in the bound project. Point
	// the Secret back at that project, or delete the Network (which acts in
	// the bound project while the manager holds credentials for it) and
	// create it again.
	ReasonCredentialsProjectChanged = "CredentialsProjectChanged"
)

// validateCredentialsRef checks spec.cloudCredentialsRef as the CRD schema
// does.
func validateCredentialsRef(ref *CloudCredentialsRef, p *field.Path) field.ErrorList {
	if ref == nil {
		return nil
	}
	var errs field.ErrorList
	if ref.SecretName == "" {
		errs = append(errs, field.Required(p.Child("secretName"), "name the Secret, in the Network's namespace, whose key clouds.yaml holds the credentials"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(ref.SecretName) {
			errs = append(errs, field.Invalid(p.Child("secretName"), ref.SecretName, msg))
		}
	}
	switch {
	case ref.CloudName == "":
		errs = append(errs, field.Required(p.Child("cloudName"), "name the entry of clouds.yaml's clouds: to use"))
	case utf8.RuneCountInString(ref.CloudName) > 255: // the schema's maxLength counts characters
		errs = append(errs, field.TooLong(p.Child("cloudName"), ref.CloudName, 255))
	}
	return errs
}
