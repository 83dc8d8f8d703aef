# bench/curve.gp: the chart of bench/curve.sh. gnuplot -e "dat='FILE'; out='SVG'" bench/curve.gp
# Columns of dat (benchctl curve-report): 1 containers, 2 launch -> last exec ms, 3 anon MiB,
# 4 RSS, 5 PSS, 6 cgroup charge, 7 CPU idle %, 8 /v1/status ms, 9 /metrics ms,
# 10 SIGTERM -> exit ms, 11 CPU with tend top %, 12 anon with checks MiB, 13 CPU with
# checks %, 14 p99 check lateness %, 15 SIGTERM -> exit with checks ms.
set terminal svg size 1200,760 dynamic font "sans,11" background rgb "white"
set output out
set datafile missing "NaN"
set logscale x 10
set xrange [0.7:1500]
set xtics ("1" 1, "10" 10, "100" 100, "1000" 1000)
set grid
set key top left box opaque
set pointsize 0.9
set multiplot layout 2,3 title "tend: cost by number of containers (bench/curve.sh)"
set title "launch → last container exec"
set ylabel "ms"
set logscale y 10
plot dat u 1:2 w lp lw 2 pt 7 t "launch → last exec"
set title "memory"
set ylabel "MiB"
plot dat u 1:3 w lp lw 2 pt 7 t "anon, idle", dat u 1:12 w lp lw 2 pt 5 t "anon, 1 check/s each", dat u 1:6 w lp lw 2 pt 9 t "cgroup charge", dat u 1:4 w lp lw 1 dt 2 pt 6 t "RSS"
set title "CPU"
set ylabel "% of a core"
unset logscale y
set yrange [0:*]
plot dat u 1:7 w lp lw 2 pt 7 t "idle", dat u 1:13 w lp lw 2 pt 5 t "1 check/s each", dat u 1:11 w lp lw 2 pt 9 t "idle, tend top attached"
set title "API latency (new connection each)"
set ylabel "ms, median"
set logscale y 10
set yrange [*:*]
plot dat u 1:8 w lp lw 2 pt 7 t "GET /v1/status", dat u 1:9 w lp lw 2 pt 5 t "GET /metrics"
set title "SIGTERM → exit"
set ylabel "ms"
plot dat u 1:10 w lp lw 2 pt 7 t "idle", dat u 1:15 w lp lw 2 pt 5 t "1 check/s each"
set title "check lateness (period 1 s)"
set ylabel "p99 gap − period, % of the period"
unset logscale y
set yrange [*:*]
plot dat u 1:14 w lp lw 2 pt 7 t "p99 lateness", 10 w l dt 2 lc rgb "red" t "target 10 %"
unset multiplot
