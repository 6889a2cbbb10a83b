#!/bin/sh
# Stands in for tensorboard and jupyter (by the name it is called as) in
# test/jobs/dask_test.go: no reachable registry carries TensorBoard, and
# Debian has no Jupyter Lab. It checks what the pod gives it (Jupyter's
# token from its Secret, TensorBoard's log dir) and serves HTTP on the port
# of its command line, as the real ones would.
name=${0##*/}
port=''
logdir=''
for a in "$@"; do
	case $a in
	--port=*) port=${a#--port=} ;;
	--logdir=*) logdir=${a#--logdir=} ;;
	esac
done
[ -n "$port" ] || { echo "$name stand-in: no --port=" >&2; exit 2; }
case $name in
jupyter)
	[ -n "${JUPYTER_TOKEN:-}" ] || { echo "jupyter stand-in: no JUPYTER_TOKEN" >&2; exit 1; }
	echo "jupyter stand-in: $* with a token of ${#JUPYTER_TOKEN} characters"
	;;
tensorboard)
	[ -n "$logdir" ] || { echo "tensorboard stand-in: no --logdir=" >&2; exit 2; }
	echo "tensorboard stand-in: $*"
	;;
esac
cd / && exec python3 -m http.server "$port"
