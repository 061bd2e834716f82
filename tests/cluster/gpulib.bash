# tests/cluster/gpulib.bash: the stand-in GPU tests' probe and checks (gpus.sh, gpus_container.sh), sourced
# after lib.sh by a test whose cluster runs with CLUSTER_OPTS=(--gpus).

# gpu_probe (after cluster_start): $WORK/probe.sh, which prints one line per task. Sets CONSTRAINED (1 on
# the cgroup pass, where ConstrainDevices=yes).
gpu_probe() {
    [ -c "$CL/dev/n1/nvidia0" ] || fail "localcluster --gpus made no stand-in GPU at $CL/dev/n1/nvidia0"
    CONSTRAINED=${BATCHAI_CGROUP:-0}
    # One line per task: what Slurm and the plugin gave it, which of its node's stand-in GPUs it can open,
    # and its devices cgroup. (Its devices.list says nothing here: cgroup v1 lists "a *:* rwm" for a cgroup
    # that allows all but a few devices, so opening each device is the check.)
    cat >"$WORK/probe.sh" <<SH
#!/bin/sh
line="GPU-TASK rank=\$SLURM_PROCID node=\$SLURMD_NODENAME cvd=\${CUDA_VISIBLE_DEVICES-unset} num=\${AZ_BATCHAI_NUM_GPUS-unset} local=\${LOCAL_RANK-unset} nvd=\${NVIDIA_VISIBLE_DEVICES-unset}"
for d in $CL/dev/\$SLURMD_NODENAME/nvidia*; do
    if err=\$(dd if="\$d" of=/dev/null count=0 2>&1); then r=open; else
        case \$err in *"not permitted"*) r=denied ;; *"No such device"*) r=open ;; *) r=other ;; esac
    fi
    line="\$line \${d##*/}=\$r"
done
echo "\$line devices-cgroup=\$(sed -n 's/^[0-9]*:devices://p' /proc/self/cgroup)"
SH
    chmod 0755 "$WORK/probe.sh"
    chown "$TEST_USER:" "$WORK/probe.sh"
}

# check_tasks STDOUT WHAT: four tasks, two per node, each its own GPU.
check_tasks() {
    local out=$1 what=$2 node cvds lines
    lines=$(grep -c '^GPU-TASK ' "$out" || true)
    [ "$lines" = 4 ] || fail "$what: $lines task lines, expected 4: $(cat "$out")"
    for node in n1 n2; do
        grep "^GPU-TASK .* node=$node " "$out" >"$CL/tasks-$node" || fail "$what: no task on $node: $(cat "$out")"
        [ "$(wc -l <"$CL/tasks-$node")" = 2 ] || fail "$what: not two tasks on $node: $(cat "$out")"
        # Slurm set each task's CUDA_VISIBLE_DEVICES to one GPU: unlike its neighbour's, or, where the devices
        # cgroup hides the others, the one GPU the task sees (index 0; told apart by the open test below).
        cvds=$(sed -n 's/.* cvd=\([^ ]*\) .*/\1/p' "$CL/tasks-$node" | sort -u | tr '\n' ' ')
        if [ "$CONSTRAINED" = 1 ]; then
            [ "$cvds" = "0 " ] || fail "$what: the tasks on $node see GPUs '$cvds', not their one GPU each"
        else
            [[ $cvds =~ ^[0-9]+\ [0-9]+\ $ ]] || fail "$what: the tasks on $node see GPUs '$cvds', not one each"
        fi
        grep -q ' num=unset \| num=0 ' "$CL/tasks-$node" && fail "$what: AZ_BATCHAI_NUM_GPUS unset or 0 on $node: $(cat "$CL/tasks-$node")"
        # What the NVIDIA container hooks read (enroot's under pyxis): the node's GPUs, Slurm confining them.
        [ "$(grep -c ' nvd=all ' "$CL/tasks-$node")" = 2 ] ||
            fail "$what: NVIDIA_VISIBLE_DEVICES is not all on $node: $(cat "$CL/tasks-$node")"
        [ "$(sed -n 's/.* local=\([^ ]*\) .*/\1/p' "$CL/tasks-$node" | sort | tr '\n' ' ')" = "0 1 " ] ||
            fail "$what: LOCAL_RANK on $node is not 0 and 1: $(cat "$CL/tasks-$node")"
        if [ "$CONSTRAINED" = 1 ]; then
            # ConstrainDevices=yes: each task is in a devices cgroup of its own, and opens exactly one stand-in
            # GPU, not its neighbour's.
            grep -v ' devices-cgroup=/.*/task_[0-9]*$' "$CL/tasks-$node" &&
                fail "$what: a task on $node is not in a task devices cgroup of its own"
            local opened
            opened=$(grep -o 'nvidia[0-9]*=open' "$CL/tasks-$node" | sort | tr '\n' ' ')
            if [ "$(grep -o 'nvidia[0-9]*=open' "$CL/tasks-$node" | wc -l)" != 2 ] ||
                [ "$(grep -o 'nvidia[0-9]*=denied' "$CL/tasks-$node" | wc -l)" != 2 ] ||
                [ "$(grep -o 'nvidia[0-9]*=open' "$CL/tasks-$node" | sort -u | wc -l)" != 2 ]; then
                fail "$what: on $node the devices cgroups do not give each task its own GPU alone ($opened): $(cat "$CL/tasks-$node")"
            fi
        fi
    done
    echo "$what:"; sed 's/^/    /' "$out"
}

