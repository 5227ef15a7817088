# nats.sh - sourced by the shipping tests and the bench: a JetStream
# cluster of nats-server processes on 127.0.0.1, in $NATS_DIR.
#
#   nats_cluster N        starts N nodes (1: a plain JetStream server;
#                         more: a cluster, routes between all), waits
#                         until JetStream answers; sets NATS_URLS
#                         (comma-separated) and NATS_URL_i
#   nats_kill i           kill -9 of node i (1-based)
#   nats_pause i, nats_resume i
#                         SIGSTOP, SIGCONT of node i: it answers nothing
#                         meanwhile, and loses nothing
#   nats_node_of PID      the node process PID is connected to (its
#                         first connection to one), "" if none
#   nats_start i          starts node i again, same ports and store
#   nats_stop_all         stops every node still running (the caller's
#                         EXIT trap must call it)
#
# Ports are picked at random among those nothing listens on; if a node
# cannot bind (another test took the port meanwhile) the cluster is
# started again on other ports. Needs nats-server and $JSPROBE (the
# jsprobe helper).

NATS_SERVER=${NATS_SERVER:-$(command -v nats-server || true)}
NATS_N=0
NATS_URLS=

# _nats_free_port VAR: sets VAR to a port nothing listens on and no
# other node of this cluster got (called in this shell, not in $(...),
# so that the ports taken are remembered; /bin/sh may have no $RANDOM).
_nats_free_port() {
	local p used
	used=$(ss -ltnH 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }')
	while :; do
		p=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000))
		case " $used $_NATS_TAKEN " in
		*" $p "*) continue ;;
		esac
		_NATS_TAKEN="$_NATS_TAKEN $p"
		eval "$1=$p"
		return
	done
}

_nats_conf() {
	local i=$1 j routes=
	mkdir -p "$NATS_DIR/n$i"
	{
		echo "server_name: n$i"
		echo "listen: 127.0.0.1:$(eval echo "\$NATS_PORT_$i")"
		echo "jetstream { store_dir: \"$NATS_DIR/n$i\" }"
		if [ "$NATS_N" -gt 1 ]; then
			for j in $(seq 1 "$NATS_N"); do
				routes="$routes nats-route://127.0.0.1:$(eval echo "\$NATS_CPORT_$j")"
			done
			echo "cluster {"
			echo "  name: tlt"
			echo "  listen: 127.0.0.1:$(eval echo "\$NATS_CPORT_$i")"
			echo "  routes: [$(echo $routes | tr ' ' ',')]"
			echo "}"
		fi
	} >"$NATS_DIR/n$i.conf"
}

nats_start() {
	local i=$1
	"$NATS_SERVER" -c "$NATS_DIR/n$i.conf" >>"$NATS_DIR/n$i.log" 2>&1 &
	eval "NATS_PID_$i=$!"
}

nats_kill() {
	local pid
	pid=$(eval echo "\${NATS_PID_$1:-}")
	[ -n "$pid" ] || return 0
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
	eval "NATS_PID_$1="
}

nats_pause() {
	local pid
	pid=$(eval echo "\${NATS_PID_$1:-}")
	[ -z "$pid" ] || kill -STOP "$pid"
}

nats_resume() {
	local pid
	pid=$(eval echo "\${NATS_PID_$1:-}")
	[ -z "$pid" ] || kill -CONT "$pid"
}

nats_node_of() {
	local i port
	for port in $(ss -tnpH state established 2>/dev/null |
	    awk -v p="pid=$1," 'index($0, p) { n = split($4, a, ":"); print a[n] }'); do
		for i in $(seq 1 "$NATS_N"); do
			if [ "$(eval echo "\$NATS_PORT_$i")" = "$port" ]; then
				echo "$i"
				return
			fi
		done
	done
}

nats_stop_all() {
	local i
	for i in $(seq 1 "$NATS_N"); do
		nats_kill "$i"
	done
}

# nats_alive i: whether node i still runs (it exits when it cannot bind).
nats_alive() {
	local pid
	pid=$(eval echo "\${NATS_PID_$1:-}")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

nats_cluster() {
	local n=$1 i try urls
	NATS_DIR=${NATS_DIR:-$TMP/nats}
	for try in 1 2 3; do
		NATS_N=$n
		_NATS_TAKEN=
		urls=
		rm -rf "$NATS_DIR"
		mkdir -p "$NATS_DIR"
		for i in $(seq 1 "$n"); do
			_nats_free_port "NATS_PORT_$i"
			_nats_free_port "NATS_CPORT_$i"
			eval "NATS_URL_$i=nats://127.0.0.1:\$NATS_PORT_$i"
			urls="$urls,$(eval echo "\$NATS_URL_$i")"
		done
		NATS_URLS=${urls#,}
		for i in $(seq 1 "$n"); do
			_nats_conf "$i"
			nats_start "$i"
		done
		if "$JSPROBE" ready "$NATS_URLS" 30 2>/dev/null; then
			# Every node up (a port taken makes one exit).
			for i in $(seq 1 "$n"); do
				nats_alive "$i" || break
			done
			[ "$i" -eq "$n" ] && nats_alive "$n" && return 0
		fi
		nats_stop_all
	done
	echo "# nats-server did not start; logs:"
	for i in $(seq 1 "$n"); do
		sed "s/^/#   n$i: /" "$NATS_DIR/n$i.log" | tail -20
	done
	return 1
}
