// Pinocchio C++ timing of constraintDynamics (closed chains), written for benchmarks/closed_chains.py.
// Usage: closed_bench DATA ROUNDS [ACC_OUT]
//
// DATA (whitespace-separated text, written by closed_chains.py) describes the model, its constraints and the
// states, so one binary serves every mechanism:
//   njoints, then per joint (depth first, ids 1..njoints):
//     parent TYPE [axis...] R(9, row-major) p(3) mass c(3) I(9)    (joint placement in the parent joint's frame;
//     the body's inertia in the joint frame, about c)   TYPE: RX RY RZ PX PY PZ | RU ax ay az | PU ax ay az |
//     S (spherical) | U a1(3) a2(3) (universal) | FF (free flyer)
//   gravity(3)
//   nconstraints, then per constraint: kind (3: CONTACT_3D, 6: CONTACT_6D) j1 R1(9) p1(3) j2 R2(9) p2(3)
//     (reference frame LOCAL, Baumgarte gains 0)
//   accuracy mu max_iter (ProximalSettings)
//   N, then N states: q(nq) v(nv) tau(nv)
// initConstraintDynamics runs once; each round calls constraintDynamics on every state in turn.  Prints
// "constraintDynamics <median> <min>" (µs per call over ROUNDS rounds, after a warm-up pass) and
// "iters <mean> <max>" (proximal iterations per call).  ACC_OUT: the accelerations of every state, one line each.
#include <pinocchio/multibody.hpp>
#include <pinocchio/algorithm/constrained-dynamics.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

using namespace pinocchio;

static Eigen::Vector3d vec3(std::istream &in) {
  Eigen::Vector3d v;
  in >> v[0] >> v[1] >> v[2];
  return v;
}

static SE3 se3(std::istream &in) {
  Eigen::Matrix3d R;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) in >> R(i, j);
  Eigen::Vector3d p = vec3(in);
  return SE3(R, p);
}

static JointModel joint(std::istream &in, const std::string &t) {
  if (t == "RX") return JointModelRX();
  if (t == "RY") return JointModelRY();
  if (t == "RZ") return JointModelRZ();
  if (t == "PX") return JointModelPX();
  if (t == "PY") return JointModelPY();
  if (t == "PZ") return JointModelPZ();
  if (t == "RU") return JointModelRevoluteUnaligned(vec3(in));
  if (t == "PU") return JointModelPrismaticUnaligned(vec3(in));
  if (t == "S") return JointModelSpherical();
  if (t == "U") {
    Eigen::Vector3d a1 = vec3(in), a2 = vec3(in);
    return JointModelUniversal(a1, a2);
  }
  if (t == "FF") return JointModelFreeFlyer();
  std::fprintf(stderr, "closed_bench: unknown joint type %s\n", t.c_str());
  std::exit(2);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s DATA ROUNDS [ACC_OUT]\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "closed_bench: cannot read %s\n", argv[1]);
    return 2;
  }
  const int rounds = std::atoi(argv[2]);
  Model model;
  int nj;
  in >> nj;
  for (int k = 0; k < nj; ++k) {
    int parent;
    std::string t;
    in >> parent >> t;
    JointModel jm = joint(in, t);
    SE3 M = se3(in);
    double m;
    in >> m;
    Eigen::Vector3d c = vec3(in);
    Eigen::Matrix3d I;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) in >> I(i, j);
    JointIndex id = model.addJoint((JointIndex)parent, jm, M, "j" + std::to_string(k + 1));
    model.appendBodyToJoint(id, Inertia(m, c, I), SE3::Identity());
  }
  Eigen::Vector3d g = vec3(in);
  model.gravity.linear(g);
  int nc;
  in >> nc;
  std::vector<RigidConstraintModel> cmodels;
  for (int k = 0; k < nc; ++k) {
    int kind, j1, j2;
    in >> kind >> j1;
    SE3 M1 = se3(in);
    in >> j2;
    SE3 M2 = se3(in);
    RigidConstraintModel cm(kind == 6 ? CONTACT_6D : CONTACT_3D, model, (JointIndex)j1, M1, (JointIndex)j2, M2, LOCAL);
    cm.baumgarte_corrector_parameters().Kp = 0.0;
    cm.baumgarte_corrector_parameters().Kd = 0.0;
    cmodels.push_back(cm);
  }
  double acc, mu;
  int max_iter;
  in >> acc >> mu >> max_iter;
  int N;
  in >> N;
  std::vector<Eigen::VectorXd> q(N, Eigen::VectorXd(model.nq)), v(N, Eigen::VectorXd(model.nv)),
      tau(N, Eigen::VectorXd(model.nv));
  for (int i = 0; i < N; ++i) {
    for (int j = 0; j < model.nq; ++j) in >> q[i][j];
    for (int j = 0; j < model.nv; ++j) in >> v[i][j];
    for (int j = 0; j < model.nv; ++j) in >> tau[i][j];
  }
  if (!in || N < 1 || rounds < 1) {
    std::fprintf(stderr, "closed_bench: malformed data file %s\n", argv[1]);
    return 2;
  }
  Data data(model);
  std::vector<RigidConstraintData> cdatas;
  for (auto &cm : cmodels) cdatas.push_back(RigidConstraintData(cm));
  initConstraintDynamics(model, data, cmodels, cdatas);
  ProximalSettings prox(acc, mu, max_iter);

  long iters = 0, max_it = 0;
  auto pass = [&](bool count) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < N; ++i) {
      constraintDynamics(model, data, q[i], v[i], tau[i], cmodels, cdatas, prox);
      if (count) {
        iters += prox.iter;
        max_it = std::max<long>(max_it, prox.iter);
      }
    }
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / N;
  };
  pass(true);  // warm-up, and the iteration counts
  std::vector<double> per;
  for (int r = 0; r < rounds; ++r) per.push_back(pass(false));
  std::sort(per.begin(), per.end());
  std::printf("constraintDynamics %.6f %.6f\n", 0.5 * (per[(rounds - 1) / 2] + per[rounds / 2]), per[0]);
  std::printf("iters %.6f %.6f\n", double(iters) / N, double(max_it));
  if (argc > 3) {
    std::FILE *f = std::fopen(argv[3], "w");
    for (int i = 0; i < N; ++i) {
      Eigen::VectorXd a = constraintDynamics(model, data, q[i], v[i], tau[i], cmodels, cdatas, prox);
      for (int j = 0; j < model.nv; ++j) std::fprintf(f, "%.17g%c", a[j], j + 1 < model.nv ? ' ' : '\n');
    }
    std::fclose(f);
  }
  return 0;
}
