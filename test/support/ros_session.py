"""A ROS test's or benchmark's run: node processes and in-process recorders in their own domain and namespace
(the ``ros`` fixture of test/conftest.py, benchmarks/bench_ros.py)."""

from __future__ import annotations

import signal

from vi_control.ros.launcher import NodeProcess, domain_id_for, run_namespace, set_domain


class Session:
    """Nodes and in-process recorders of one run: own domain and namespace; ``close`` stops everything
    (SIGINT to all nodes first, so they shut down in parallel). Tests and benchmarks use it."""

    def __init__(self, key: str, log_dir: str):
        import rclpy

        self.domain, self.ns, self.log_dir = domain_id_for(key), run_namespace(key), log_dir
        set_domain(self.domain)
        rclpy.init(domain_id=self.domain)
        self.procs: list[NodeProcess] = []
        self.recorders: list = []

    def start(self, module: str, name: str | None = None, params_files: list[str] = (), **overrides) -> NodeProcess:
        """Node ``module`` in this run's domain and namespace: ``params_files`` (paths, or names in config/), then
        ``overrides`` (parameters) on top."""
        p = NodeProcess(
            module,
            self.domain,
            params_files,
            overrides=overrides,
            log_dir=str(self.log_dir),
            name=name,
            namespace=self.ns,
        )
        self.procs.append(p)
        return p

    def recorder(self, joint_names, **kw):
        from vi_control.ros.recorder import Recorder

        r = Recorder(joint_names, namespace=self.ns, **kw)
        self.recorders.append(r)
        return r

    def close(self) -> None:
        import rclpy

        for r in self.recorders:
            r.close()
        for p in self.procs:
            p.signal(signal.SIGINT)
        for p in self.procs:
            p.stop()
        rclpy.try_shutdown()
