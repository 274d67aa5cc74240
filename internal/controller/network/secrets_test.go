package network_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kube-sample/controller-manager/internal/controller/network"
	"github.com/kube-sample/controller-manager/internal/controller/network/memory"
	"github.com/kube-sample/controller-manager/internal/controller/network/neutron"
	samplecrdv1 "github.com/kube-sample/controller-manager/pkg/apis/samplecrd/v1"
	"github.com/kube-sample/controller-manager/pkg/generated/clientset/versioned/fake"
	"github.com/kube-sample/controller-manager/pkg/generated/informers/externalversions"
)

// marker is in every field of the Secret of TestNoSecretInAnyMessage.
const marker = "Zq7marker"

// markedClouds is a clouds.yaml whose every value holds the marker, its
// auth_url (user information, path, query, fragment) included; host is
// where Keystone is (or is not).
func markedClouds(host string) map[string][]byte {
	m := func(field string) string { return marker + "-" + field }
	return map[string][]byte{samplecrdv1.CloudCredentialsKey: fmt.Appendf(nil, `clouds:
  openstack:
    auth:
      auth_url: http://%s:%s@%s/%s/v3?token=%s#%s
      username: %s
      password: %s
      project_name: %s
      user_domain_name: %s
      project_domain_name: %s
    region_name: %s
`, m("urluser"), m("urlpass"), host, m("path"), m("token"), m("fragment"),
		m("username"), m("password"), m("project"), m("userdomain"), m("projectdomain"), m("region"))}
}

// No condition, Event or log line carries any part of a Network's Secret,
// whether Keystone refuses the credentials or cannot be reached: the
// real ParseCloud and NewCloudBackend, a Keystone that answers 401.
func TestNoSecretInAnyMessage(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error": {"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}}`)
	}))
	defer refusing.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	for _, tc := range []struct {
		name, host, reason string
	}{
		{name: "Keystone refuses", host: strings.TrimPrefix(refusing.URL, "http://"), reason: samplecrdv1.ReasonCredentialsRefused},
		{name: "Keystone unreachable", host: closed, reason: samplecrdv1.ReasonBackendUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(4)))
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
			defer cancel()
			sec := newSecrets()
			sec.set("a", "creds", markedClouds(tc.host))
			obj := credNetwork("a", "n", "u1", "10.1.0.0/24", &samplecrdv1.CloudCredentialsRef{SecretName: "creds", CloudName: "openstack"})
			client := fake.NewClientset(obj)
			factory := externalversions.NewSharedInformerFactory(client, 0)
			recorder := record.NewFakeRecorder(100)
			done := runControllerWith(ctx, t, client, factory, recorder, network.Options{Backend: memory.New(),
				DownRetry: 10 * time.Millisecond, DownRetryMax: 20 * time.Millisecond,
				Credentials: &network.Credentials{GetSecret: sec.get, Parse: neutron.ParseCloud,
					NewBackend: neutron.NewCloudBackend(neutron.Options{RequestTimeout: 5 * time.Second}), TTL: time.Minute}})
			waitCondition(ctx, t, client, "a", "n", metav1.ConditionFalse, tc.reason)
			cancel()
			<-done

			var texts []string
			got, err := client.SamplecrdV1().Networks("a").Get(context.Background(), "n", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cond := meta.FindStatusCondition(got.Status.Conditions, samplecrdv1.ConditionReady)
			texts = append(texts, "condition: "+cond.Message)
			for len(recorder.Events) > 0 {
				texts = append(texts, "event: "+<-recorder.Events)
			}
			texts = append(texts, "log: "+logger.GetSink().(ktesting.Underlier).GetBuffer().String())
			for _, s := range texts {
				if strings.Contains(s, marker) {
					t.Errorf("a message carries the Secret's content:\n%s", s)
				}
			}
		})
	}
}
