#!/usr/bin/env bash
# The chaos run (issue 22): two or more packaged instances behind the shipped nginx gateway, on a fresh
# database `payonce_chaos` of the local MariaDB (each instance reaches it through a MySQL-protocol proxy of
# its own that the run controls) and a throwaway redis-server of its own (behind a proxy too; the shared
# Redis is never touched), with the sandbox of one more instance, which nothing faults, as the channel
# (reached through a proxy as well). Every instance also takes pay commands from a RabbitMQ node of the
# run's own (the shared broker is never touched; the node is killed and started again by the schedule),
# through a proxy of its own; the node and its data are gone at the end.
# A population of clients pays, by HTTP and by queue, while faults drawn from a seeded schedule happen;
# then every fault is healed, reconciliation is given its time, and a checker reads every answer, the
# tables, the channel's ledger and the dead letters and names each violation of contract sections 7, 9 and
# 10. Loopback only; the run stops by itself. The driver is src/test/java/io/payonce/chaos, run with the test
# class path as scripts/bench.sh runs its own.
#
#   scripts/chaos.sh                          60 s of traffic, a random seed, 2 instances
#   scripts/chaos.sh --duration 15m           a long run (plus start-up, settling and the check)
#   scripts/chaos.sh --seed 22                the schedule of seed 22 again
#   scripts/chaos.sh --instances 3 --clients 24
#   scripts/chaos.sh --database NAME          another database than payonce_chaos (dropped and created
#                                             anew), so that two runs can share the MariaDB server
#   scripts/chaos.sh --break NAME [--duration 90s]
#                                             the same run against a deliberately broken build: a copy of
#                                             the committed tree under target/chaos-break/NAME with one line
#                                             changed: not-found-declines, timeout-declines or
#                                             settle-without-status (see break_line below); succeeds only
#                                             if the run reports a violation
#
# Prints the summary; exits 0 with no violation, 1 with one (printing the seed and the history of the
# first violating request), 2 when the harness could not judge the run. Logs of every process started
# are under target/it-logs (instances, sandbox), target/throwaway-redis-*.log and /tmp/payonce-nginx*.
set -euo pipefail
cd "$(dirname "$0")/.."

duration=60s seed=$(( (RANDOM << 15 | RANDOM) % 1000000 )) instances=2 clients=16 break_name= database=payonce_chaos
while (($#)); do
  case $1 in
    --duration) duration=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --instances) instances=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --break) break_name=$2; shift 2 ;;
    --database) database=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "chaos.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ $duration =~ ^[0-9]+(ms|s|m|h)?$ ]] || { echo "chaos.sh: --duration like 90s, 15m" >&2; exit 2; }
[[ $database =~ ^[A-Za-z0-9_]+$ ]] || { echo "chaos.sh: --database takes letters, digits and _" >&2; exit 2; }

# The one-line breaks --break knows: file, the line as it is, the line as the broken build has it.
break_line() {
  case $1 in
    settle-without-status) # the settlement no longer requires the payment PROCESSING and the order PAYING
      echo "src/main/java/io/payonce/payment/PaymentRepository.java"
      echo "            WHERE p.id = ? AND p.status = ? AND o.status = ? AND o.version = ?\"\"\";"
      echo "            WHERE p.id = ? AND ? IS NOT NULL AND ? IS NOT NULL AND ? IS NOT NULL\"\"\";" ;;
    not-found-declines) # the channel's "no such charge" read as a decline, by reconciliation's query
      echo "src/main/java/io/payonce/channel/PaymentChannel.java"
      echo "            return new ChargeResult.NotFound();"
      echo "            return new ChargeResult.Declined(null);" ;;
    timeout-declines) # a channel call that timed out read as a decline
      echo "src/main/java/io/payonce/channel/PaymentChannel.java"
      echo "        return new ChargeResult.Unknown(failure.toString());"
      echo "        return new ChargeResult.Declined(null);" ;;
    *) echo "chaos.sh: unknown --break $1 (settle-without-status, not-found-declines, timeout-declines)" >&2; exit 2 ;;
  esac
}

scripts/services.sh --test-tools >&2
source scripts/java25.sh

if [[ -n $break_name ]]; then
  mapfile -t change < <(break_line "$break_name")
  dir=target/chaos-break/$break_name
  rm -rf "$dir" && mkdir -p "$dir"
  git archive HEAD | tar -x -C "$dir"
  file=$dir/${change[0]}
  grep -qxF -- "${change[1]}" "$file" || { echo "chaos.sh: $file no longer has the line to break" >&2; exit 2; }
  # literal replacement of the whole line, whatever characters it holds
  CHAOS_FROM=${change[1]} CHAOS_TO=${change[2]} perl -i -pe 'chomp; $_ = $ENV{CHAOS_TO} if $_ eq $ENV{CHAOS_FROM}; $_ .= "\n"' "$file"
  echo "chaos.sh: broken build $break_name in $dir:" >&2
  diff <(git show "HEAD:${change[0]}") "$file" >&2 || true
  set +e
  (cd "$dir" && scripts/chaos.sh --duration "$duration" --seed "$seed" --instances "$instances" --clients "$clients" \
    --database "$database")
  status=$?
  set -e
  case $status in
    1) echo "chaos.sh: the broken build ($break_name) was caught" >&2; exit 0 ;;
    0) echo "chaos.sh: the broken build ($break_name) was NOT caught by seed $seed" >&2; exit 1 ;;
    *) echo "chaos.sh: the run against the broken build could not be judged (exit $status)" >&2; exit "$status" ;;
  esac
fi

# Builds the package (and the test classes and their class path) when anything it is made from changed.
jar=target/quarkus-app/quarkus-run.jar classpath=target/chaos-classpath.txt
if [[ ! -f $jar || ! -f $classpath || ! -d target/test-classes/io/payonce/chaos ]] ||
   [[ -n $(find src pom.xml -newer "$classpath" -type f -print -quit) ]]; then
  echo "chaos.sh: building" >&2
  ./mvnw -B -q package dependency:build-classpath -DskipTests \
    -Dmdep.includeScope=test -Dmdep.outputFile="$classpath"
fi

case $duration in
  *ms) seconds=$(( ${duration%ms} / 1000 )) ;; *s) seconds=${duration%s} ;; *m) seconds=$(( ${duration%m} * 60 )) ;;
  *h) seconds=$(( ${duration%h} * 3600 )) ;; *) seconds=$duration ;;
esac
# traffic, plus start-up, the clients' last requests, settling, the final round and the check; on
# SIGTERM the driver kills what it started
exec timeout --kill-after=30 $(( seconds * 2 + 1200 )) \
  java -Xms256m -Xmx768m -XX:+UseSerialGC -Djava.util.logging.manager=org.jboss.logmanager.LogManager -cp "target/test-classes:$(cat "$classpath")" \
  -Dchaos.duration="$duration" -Dchaos.seed="$seed" -Dchaos.instances="$instances" -Dchaos.clients="$clients" \
  -Dchaos.db.name="$database" io.payonce.chaos.Chaos
