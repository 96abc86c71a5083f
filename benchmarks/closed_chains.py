"""Constrained forward dynamics: symgen TA (one Python call; the C batch per state) against
pin.constraintDynamics (one Python call) on random closed chains of tests/pin_closed.py.  Run:
python benchmarks/closed_chains.py.  Pinocchio C++ is not timed here yet."""
import sys; sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parents[1] / 'tests'))
import numpy as np, symgen, timeit, tempfile, pinocchio as pin
import pin_closed as pc
for seed, fl, cuts in [(0, False, ("BALL","LOCKED")), (2, False, ("PIN","BALL"))]:
    doc, q_ref = pc.random_closed_chain_dict(seed, floating=fl, n_bodies=6, n_loops=2, cut_types=cuts)
    mb = symgen.build(pc.write_yaml(doc, tempfile.mkdtemp()))
    pm, maps = pc.pinocchio_model(doc); cms = pc.constraint_models(pm, doc)
    rng = np.random.default_rng(0); qp = pc.to_pin_q(maps, q_ref); v = pc.consistent_velocity(pm, cms, qp, rng); tau = rng.normal(size=pm.nv)
    pd = pm.createData(); cds = [c.createData() for c in cms]; pin.initConstraintDynamics(pm, pd, cms, cds)
    prox = pin.ProximalSettings(1e-12, 1e-6, 200)
    n = 5000
    tp = timeit.timeit(lambda: pin.constraintDynamics(pm, pd, qp, v, tau, cms, cds, prox), number=n)/n
    q, u = pc.from_pin_state(maps, qp, v); T = pc.from_pin_tau(maps, q, tau)
    ts = timeit.timeit(lambda: mb.forward_dynamics(q, u, T), number=n)/n
    N=2000; Q=np.tile(q,(N,1)); U=np.tile(u,(N,1)); TT=np.tile(T,(N,1))
    tb = timeit.timeit(lambda: mb.ta_forward_dynamics(Q,U,TT), number=20)/20/N
    print(f"{doc['name']} {cuts} nu={mb.nu} nc={mb.layout.nc}: pin py1 {tp*1e6:.2f} us, symgen py1 {ts*1e6:.2f} us, symgen C batch {tb*1e6:.3f} us/state, prox iters {prox.iter}")
