/* symgen's one-state calls from Python: one generic CPython extension, written once by hand.
 *
 * A Call object holds a pointer to one of a model's one-state C functions (taken from the model's cffi
 * module with ffi.cast("uintptr_t", lib.fn)) and what it needs to call it.  Called with exactly the
 * positional arguments of its kind (step_derivatives: also method= as a keyword), each state vector a C-contiguous, aligned float64 ndarray of the right
 * length (and the frame a handle of this model or a frame name), it calls the C function once on the
 * arrays' memory and returns a new float64 array.  Anything else (keywords, lists, strided views, batches,
 * wrong shapes, unknown frames) goes to the fallback, the model's Python method, which converts, checks,
 * raises the argument errors and runs the batched path: the same per-state C function either way.
 *
 * Built on first use by symgen.compile.build_extension (strict flags, content-hash cache, lock); the module
 * name is given as SG_FASTCALL_NAME / SG_FASTCALL_INIT at compile time.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifndef SG_FASTCALL_NAME
#define SG_FASTCALL_NAME "sg_fastcall"
#define SG_FASTCALL_INIT PyInit_sg_fastcall
#endif

/* the kinds of one-state C functions (their argument lists) */
enum {
    K_Q_F = 0,    /* void fn(const double *q, int f, double *out)                            frame_pose, jacobian */
    K_Q_U_F = 1,  /* void fn(const double *q, const double *u, int f, double *out)           frame_velocity */
    K_Q = 2,      /* void fn(const double *q, double *out)                                   frame_poses */
    K_Q_FIXED = 3,/* void fn(const double *q, const double *u0, const double *p0, double *out)   mass_matrix */
    K_DYN = 4,    /* int fn(const double *q, const double *u, const double *g, const double *x, double *out) */
    K_TA = 5,     /* int fn(q, u, g, x, const double *k (NULL), double *out)                 loops' FD */
    K_STEP = 6    /* int fn(q, u, g, T, double dt, int method, double *work, double *A, double *B)
                     step_derivatives: called (q, u, T, dt[, method]), returns (A, B) */
};

typedef void (*fn_q_f)(const double *, int, double *);
typedef void (*fn_q_u_f)(const double *, const double *, int, double *);
typedef void (*fn_q)(const double *, double *);
typedef void (*fn_q_fixed)(const double *, const double *, const double *, double *);
typedef int (*fn_dyn)(const double *, const double *, const double *, const double *, double *);
typedef int (*fn_ta)(const double *, const double *, const double *, const double *, const double *, double *);
typedef int (*fn_step)(const double *, const double *, const double *, const double *, double, int, double *,
                       double *, double *);

/* the C function, as the pointer type of its kind (ISO C converts no object pointer to a function pointer:
 * the address comes in as an integer and is converted once, to the kind's type) */
typedef union {
    fn_q_f q_f;
    fn_q_u_f q_u_f;
    fn_q q;
    fn_q_fixed q_fixed;
    fn_dyn dyn;
    fn_ta ta;
    fn_step step;
} Fn;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Fn fn;
    int kind;
    Py_ssize_t nq, nu, nframes;
    int out_nd;
    npy_intp out_dims[3];
    PyObject *fallback;     /* the Python method: everything the fast path does not take */
    PyObject *handle_type;  /* this model's FrameHandle type (frames by index) */
    PyObject *frame_index;  /* {name: index} */
    PyObject *aux;          /* K_Q_FIXED: (u0, p0) arrays; K_DYN/K_TA/K_STEP: the gravity array (3,); K_STEP's
                             * aux2: its work array */
    PyObject *aux2;
    PyObject *on_status;    /* called with a nonzero status and q (it raises); None: the status is not checked */
    PyObject *name, *doc;
} Call;

/* a C-contiguous, aligned, native float64 1-d array of length n, or NULL (no exception set) */
static const double *vec(PyObject *o, Py_ssize_t n)
{
    PyArrayObject *a;
    if (!PyArray_Check(o))
        return NULL;
    a = (PyArrayObject *)o;
    if (PyArray_NDIM(a) != 1 || PyArray_DIM(a, 0) != n || PyArray_TYPE(a) != NPY_DOUBLE
        || !PyArray_ISCARRAY_RO(a) || !PyArray_ISNOTSWAPPED(a))
        return NULL;
    return (const double *)PyArray_DATA(a);
}

/* the frame's index: this model's handle, or a name (str) it knows; -1 otherwise (no exception set) */
static int frame_of(Call *self, PyObject *f)
{
    PyObject *i;
    long v;
    if ((PyObject *)Py_TYPE(f) == self->handle_type) {
        v = PyLong_AsLong(f);
    } else if (PyUnicode_CheckExact(f)) {
        i = PyDict_GetItemWithError(self->frame_index, f);   /* borrowed */
        if (i == NULL) {
            PyErr_Clear();
            return -1;
        }
        v = PyLong_AsLong(i);
    } else {
        return -1;
    }
    if (v < 0 || v >= self->nframes) {
        PyErr_Clear();
        return -1;
    }
    return (int)v;
}

static PyObject *fall_back(Call *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

/* K_STEP: (q, u, T, dt[, method]) or (q, u, T, dt, method=...) -> (A, B); anything else to the fallback */
static PyObject *step_call(Call *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    const double *q, *u, *T;
    double dt;
    int method = 0, status;
    npy_intp dA[2], dB[2];
    PyObject *A, *B, *r, *m = NULL;
    if (nkw > 1 || (nkw == 1 && (nargs != 4 || !PyUnicode_Check(PyTuple_GET_ITEM(kwnames, 0))
                                 || PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "method") != 0)))
        return fall_back(self, args, nargsf, kwnames);
    if ((nargs != 4 && nargs != 5) || !(q = vec(args[0], self->nq)) || !(u = vec(args[1], self->nu))
        || !(T = vec(args[2], self->nu)) || !PyFloat_CheckExact(args[3]))
        return fall_back(self, args, nargsf, kwnames);
    dt = PyFloat_AS_DOUBLE(args[3]);
    if (!(dt > 0.0 && dt < HUGE_VAL))
        return fall_back(self, args, nargsf, kwnames);
    if (nargs == 5)
        m = args[4];
    else if (nkw == 1)
        m = args[4];                                  /* the keyword's value follows the positional arguments */
    if (m != NULL) {
        if (!PyUnicode_CheckExact(m))
            return fall_back(self, args, nargsf, kwnames);
        if (PyUnicode_CompareWithASCIIString(m, "rk4") == 0)
            method = 0;
        else if (PyUnicode_CompareWithASCIIString(m, "euler") == 0
                 || PyUnicode_CompareWithASCIIString(m, "semi_implicit_euler") == 0)
            method = 1;
        else
            return fall_back(self, args, nargsf, kwnames);
    }
    dA[0] = dA[1] = dB[0] = 2 * self->nu;
    dB[1] = self->nu;
    A = PyArray_SimpleNew(2, dA, NPY_DOUBLE);
    if (A == NULL)
        return NULL;
    B = PyArray_SimpleNew(2, dB, NPY_DOUBLE);
    if (B == NULL) {
        Py_DECREF(A);
        return NULL;
    }
    status = self->fn.step(q, u, (const double *)PyArray_DATA((PyArrayObject *)self->aux), T, dt, method,
                           (double *)PyArray_DATA((PyArrayObject *)self->aux2), (double *)PyArray_DATA((PyArrayObject *)A),
                           (double *)PyArray_DATA((PyArrayObject *)B));
    if (status && self->on_status != Py_None) {
        r = PyObject_CallFunction(self->on_status, "iO", status, args[0]);
        if (r == NULL) {
            Py_DECREF(A);
            Py_DECREF(B);
            return NULL;
        }
        Py_DECREF(r);
    }
    r = PyTuple_Pack(2, A, B);
    Py_DECREF(A);
    Py_DECREF(B);
    return r;
}

static PyObject *call_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Call *self = (Call *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    const double *q, *u = NULL, *x = NULL, *g;
    int f = 0, status = 0;
    PyObject *out;
    double *po;

    if (self->kind == K_STEP)
        return step_call(self, args, nargsf, kwnames);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0)
        return fall_back(self, args, nargsf, kwnames);
    switch (self->kind) {
    case K_Q_F:
        if (nargs != 2 || !(q = vec(args[0], self->nq)) || (f = frame_of(self, args[1])) < 0)
            return fall_back(self, args, nargsf, kwnames);
        break;
    case K_Q_U_F:
        if (nargs != 3 || !(q = vec(args[0], self->nq)) || !(u = vec(args[1], self->nu))
            || (f = frame_of(self, args[2])) < 0)
            return fall_back(self, args, nargsf, kwnames);
        break;
    case K_Q:
    case K_Q_FIXED:
        if (nargs != 1 || !(q = vec(args[0], self->nq)))
            return fall_back(self, args, nargsf, kwnames);
        break;
    case K_DYN:
    case K_TA:
        if (nargs != 3 || !(q = vec(args[0], self->nq)) || !(u = vec(args[1], self->nu))
            || !(x = vec(args[2], self->nu)))
            return fall_back(self, args, nargsf, kwnames);
        break;
    default:
        PyErr_SetString(PyExc_SystemError, "symgen fastcall: unknown kind");
        return NULL;
    }
    out = PyArray_SimpleNew(self->out_nd, self->out_dims, NPY_DOUBLE);
    if (out == NULL)
        return NULL;
    po = (double *)PyArray_DATA((PyArrayObject *)out);
    switch (self->kind) {
    case K_Q_F:
        self->fn.q_f(q, f, po);
        break;
    case K_Q_U_F:
        self->fn.q_u_f(q, u, f, po);
        break;
    case K_Q:
        self->fn.q(q, po);
        break;
    case K_Q_FIXED:
        self->fn.q_fixed(q, (const double *)PyArray_DATA((PyArrayObject *)self->aux),
                               (const double *)PyArray_DATA((PyArrayObject *)self->aux2), po);
        break;
    case K_DYN:
        g = (const double *)PyArray_DATA((PyArrayObject *)self->aux);
        status = self->fn.dyn(q, u, g, x, po);
        break;
    default: /* K_TA */
        g = (const double *)PyArray_DATA((PyArrayObject *)self->aux);
        status = self->fn.ta(q, u, g, x, NULL, po);
        break;
    }
    if (status && self->on_status != Py_None) {
        PyObject *r = PyObject_CallFunction(self->on_status, "iO", status, args[0]);
        if (r == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(r);
    }
    return out;
}

/* the fixed arrays must stay float64, C-contiguous, of the size the kind reads */
static int check_aux(PyObject *o, Py_ssize_t n, const char *what)
{
    if (!PyArray_Check(o) || PyArray_TYPE((PyArrayObject *)o) != NPY_DOUBLE
        || !PyArray_ISCARRAY_RO((PyArrayObject *)o) || PyArray_SIZE((PyArrayObject *)o) < n) {
        PyErr_Format(PyExc_TypeError, "symgen fastcall: %s must be a C-contiguous float64 array of >= %zd numbers",
                     what, n);
        return -1;
    }
    return 0;
}

/* Call(kind, fn_address, nq, nu, out_shape, fallback, name, doc, handle_type, frame_index, nframes,
 *      aux, aux2, on_status) */
static PyObject *call_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    Call *self;
    int kind;
    unsigned long long addr;
    Py_ssize_t nq, nu, nframes, i;
    PyObject *shape, *fallback, *name, *doc, *htype, *findex, *aux, *aux2, *on_status;
    (void)kwds;
    if (!PyArg_ParseTuple(args, "iKnnO!OUOOOnOOO", &kind, &addr, &nq, &nu, &PyTuple_Type, &shape, &fallback,
                          &name, &doc, &htype, &findex, &nframes, &aux, &aux2, &on_status))
        return NULL;
    if (kind < K_Q_F || kind > K_STEP || addr == 0 || PyTuple_GET_SIZE(shape) < 1 || PyTuple_GET_SIZE(shape) > 3
        || !PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_ValueError, "symgen fastcall: bad Call arguments");
        return NULL;
    }
    if ((kind == K_Q_F || kind == K_Q_U_F) && (!PyType_Check(htype) || !PyDict_Check(findex))) {
        PyErr_SetString(PyExc_TypeError, "symgen fastcall: a frame call needs the handle type and {name: index}");
        return NULL;
    }
    if (kind == K_Q_FIXED && (check_aux(aux, nu, "u0") || check_aux(aux2, 1, "p0")))
        return NULL;
    if ((kind == K_DYN || kind == K_TA || kind == K_STEP) && check_aux(aux, 3, "gravity"))
        return NULL;
    if (kind == K_STEP && check_aux(aux2, 1, "work"))
        return NULL;
    self = (Call *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = call_vectorcall;
    switch (kind) {
    case K_Q_F: self->fn.q_f = (fn_q_f)(uintptr_t)addr; break;
    case K_Q_U_F: self->fn.q_u_f = (fn_q_u_f)(uintptr_t)addr; break;
    case K_Q: self->fn.q = (fn_q)(uintptr_t)addr; break;
    case K_Q_FIXED: self->fn.q_fixed = (fn_q_fixed)(uintptr_t)addr; break;
    case K_DYN: self->fn.dyn = (fn_dyn)(uintptr_t)addr; break;
    case K_STEP: self->fn.step = (fn_step)(uintptr_t)addr; break;
    default: self->fn.ta = (fn_ta)(uintptr_t)addr; break;
    }
    self->kind = kind;
    self->nq = nq;
    self->nu = nu;
    self->nframes = nframes;
    self->out_nd = (int)PyTuple_GET_SIZE(shape);
    for (i = 0; i < self->out_nd; ++i) {
        self->out_dims[i] = (npy_intp)PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (self->out_dims[i] < 0) {
            Py_DECREF(self);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "symgen fastcall: negative output dimension");
            return NULL;
        }
    }
    Py_INCREF(fallback); self->fallback = fallback;
    Py_INCREF(name); self->name = name;
    Py_INCREF(doc); self->doc = doc;
    Py_INCREF(htype); self->handle_type = htype;
    Py_INCREF(findex); self->frame_index = findex;
    Py_INCREF(aux); self->aux = aux;
    Py_INCREF(aux2); self->aux2 = aux2;
    Py_INCREF(on_status); self->on_status = on_status;
    return (PyObject *)self;
}

static int call_traverse(Call *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fallback);
    Py_VISIT(self->handle_type);
    Py_VISIT(self->frame_index);
    Py_VISIT(self->aux);
    Py_VISIT(self->aux2);
    Py_VISIT(self->on_status);
    return 0;
}

static int call_clear(Call *self)
{
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->handle_type);
    Py_CLEAR(self->frame_index);
    Py_CLEAR(self->aux);
    Py_CLEAR(self->aux2);
    Py_CLEAR(self->on_status);
    Py_CLEAR(self->name);
    Py_CLEAR(self->doc);
    return 0;
}

static void call_dealloc(Call *self)
{
    PyObject_GC_UnTrack(self);
    call_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* set_gravity(array): the gravity array K_DYN / K_TA read (the model's gravity setter renews it) */
static PyObject *call_set_gravity(Call *self, PyObject *g)
{
    if (check_aux(g, 3, "gravity"))
        return NULL;
    Py_INCREF(g);
    Py_SETREF(self->aux, g);
    Py_RETURN_NONE;
}

static PyObject *call_get_name(Call *self, void *closure)
{
    (void)closure;
    Py_INCREF(self->name);
    return self->name;
}

static PyObject *call_get_doc(Call *self, void *closure)
{
    (void)closure;
    Py_INCREF(self->doc);
    return self->doc;
}

static PyObject *call_get_fallback(Call *self, void *closure)
{
    (void)closure;
    Py_INCREF(self->fallback);
    return self->fallback;
}

static PyObject *call_repr(Call *self)
{
    return PyUnicode_FromFormat("<symgen one-state call %U (C fast path; else %R)>", self->name, self->fallback);
}

static PyMethodDef call_methods[] = {
    {"set_gravity", (PyCFunction)call_set_gravity, METH_O, "Renew the gravity array the dynamics read."},
    {NULL, NULL, 0, NULL}
};

static PyGetSetDef call_getset[] = {
    {"__name__", (getter)call_get_name, NULL, NULL, NULL},
    {"__doc__", (getter)call_get_doc, NULL, NULL, NULL},
    {"__wrapped__", (getter)call_get_fallback, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL}
};

static PyTypeObject CallType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = SG_FASTCALL_NAME ".Call",
    .tp_basicsize = sizeof(Call),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A model's one-state C function with its fallback (symgen.runtime.fastcall).",
    .tp_new = call_new,
    .tp_dealloc = (destructor)call_dealloc,
    .tp_traverse = (traverseproc)call_traverse,
    .tp_clear = (inquiry)call_clear,
    .tp_vectorcall_offset = offsetof(Call, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_methods = call_methods,
    .tp_getset = call_getset,
    .tp_repr = (reprfunc)call_repr,
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, SG_FASTCALL_NAME, "symgen's one-state calls (see fastcall.c).", -1,
    NULL, NULL, NULL, NULL, NULL
};

PyMODINIT_FUNC SG_FASTCALL_INIT(void)
{
    PyObject *m;
    import_array();
    if (PyType_Ready(&CallType) < 0)
        return NULL;
    m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    Py_INCREF(&CallType);
    if (PyModule_AddObject(m, "Call", (PyObject *)&CallType) < 0) {
        Py_DECREF(&CallType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
