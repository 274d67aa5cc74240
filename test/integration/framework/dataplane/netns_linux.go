//go:build linux

package dataplane

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"syscall"
)

// namespaceAttr starts a child in a new network namespace (and, with user,
// a new user namespace mapping this user to root in it), killed when the
// parent dies.
func namespaceAttr(user bool) (*syscall.SysProcAttr, error) {
	a := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if user {
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	}
	return a, nil
}

// configureLoopback does, through rtnetlink (no iproute2 needed):
//
//	ip link set lo up
//	ip addr add 198.51.100.10/32 dev lo
//	ip route add default dev lo
//
// The default route is there because kube-apiserver looks for one to pick
// its advertised address, even when it binds 127.0.0.1.
func configureLoopback() error {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		return err
	}
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("opening a netlink socket: %w", err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return fmt.Errorf("binding the netlink socket: %w", err)
	}
	ne := binary.NativeEndian
	index := uint32(lo.Index)

	// struct ifinfomsg: family, pad, type, index, flags, change.
	link := make([]byte, syscall.SizeofIfInfomsg)
	link[0] = syscall.AF_UNSPEC
	ne.PutUint32(link[4:], index)
	ne.PutUint32(link[8:], syscall.IFF_UP)
	ne.PutUint32(link[12:], syscall.IFF_UP)
	if err := netlinkRequest(fd, 1, syscall.RTM_NEWLINK, 0, link); err != nil {
		return fmt.Errorf("setting lo up: %w", err)
	}

	// struct ifaddrmsg: family, prefixlen, flags, scope, index.
	ip := net.ParseIP(BackendIP).To4()
	addr := make([]byte, syscall.SizeofIfAddrmsg)
	addr[0], addr[1], addr[3] = syscall.AF_INET, 32, syscall.RT_SCOPE_UNIVERSE
	ne.PutUint32(addr[4:], index)
	addr = appendAttr(addr, syscall.IFA_LOCAL, ip)
	addr = appendAttr(addr, syscall.IFA_ADDRESS, ip)
	if err := netlinkRequest(fd, 2, syscall.RTM_NEWADDR, syscall.NLM_F_CREATE|syscall.NLM_F_EXCL, addr); err != nil {
		return fmt.Errorf("adding %s/32 to lo: %w", BackendIP, err)
	}

	// struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type, flags.
	route := make([]byte, syscall.SizeofRtMsg)
	route[0], route[4], route[5], route[6], route[7] = syscall.AF_INET, syscall.RT_TABLE_MAIN, syscall.RTPROT_BOOT, syscall.RT_SCOPE_LINK, syscall.RTN_UNICAST
	oif := make([]byte, 4)
	ne.PutUint32(oif, index)
	route = appendAttr(route, syscall.RTA_OIF, oif)
	if err := netlinkRequest(fd, 3, syscall.RTM_NEWROUTE, syscall.NLM_F_CREATE|syscall.NLM_F_EXCL, route); err != nil {
		return fmt.Errorf("adding a default route via lo: %w", err)
	}
	return nil
}

// appendAttr appends a struct rtattr and its data, padded to 4 bytes.
func appendAttr(b []byte, typ uint16, data []byte) []byte {
	hdr := make([]byte, syscall.SizeofRtAttr)
	binary.NativeEndian.PutUint16(hdr[0:], uint16(syscall.SizeofRtAttr+len(data)))
	binary.NativeEndian.PutUint16(hdr[2:], typ)
	b = append(b, hdr...)
	b = append(b, data...)
	for len(b)%syscall.NLMSG_ALIGNTO != 0 {
		b = append(b, 0)
	}
	return b
}

// netlinkRequest sends one rtnetlink request and waits for its ack.
func netlinkRequest(fd int, seq uint32, typ, flags uint16, body []byte) error {
	ne := binary.NativeEndian
	msg := make([]byte, syscall.NLMSG_HDRLEN, syscall.NLMSG_HDRLEN+len(body))
	msg = append(msg, body...)
	ne.PutUint32(msg[0:], uint32(len(msg)))
	ne.PutUint16(msg[4:], typ)
	ne.PutUint16(msg[6:], syscall.NLM_F_REQUEST|syscall.NLM_F_ACK|flags)
	ne.PutUint32(msg[8:], seq)
	if err := syscall.Sendto(fd, msg, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 1<<16)
	for {
		n, _, err := syscall.Recvfrom(fd, buf, 0)
		if err != nil {
			return err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.Header.Seq != seq || m.Header.Type != syscall.NLMSG_ERROR {
				continue
			}
			if len(m.Data) < 4 {
				return fmt.Errorf("short netlink ack")
			}
			if errno := int32(ne.Uint32(m.Data)); errno != 0 {
				return syscall.Errno(-errno)
			}
			return nil
		}
	}
}

// processAttr puts a helper process in its own process group and kills it
// when this process dies.
func processAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
