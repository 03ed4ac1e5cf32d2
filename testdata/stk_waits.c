/* Threads blocked in glibc's waits, whose frames gdb partly rebuilds from
   call-site DWARF (tail calls inside libc): sem_wait, pthread_cond_wait,
   a contended pthread_mutex_lock, and the main thread in pthread_join. */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <unistd.h>

static sem_t sem;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

__attribute__((noinline)) static void *in_sem_wait(void *arg)
{
	(void)arg;
	sem_wait(&sem);
	return NULL;
}

__attribute__((noinline)) static void *in_cond_wait(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;)
		pthread_cond_wait(&cv, &mu);
	return NULL;
}

__attribute__((noinline)) static void *in_mutex_lock(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&held);
	return NULL;
}

int main(void)
{
	pthread_t t[3];
	sem_init(&sem, 0, 0);
	pthread_mutex_lock(&held);
	pthread_create(&t[0], NULL, in_sem_wait, NULL);
	pthread_create(&t[1], NULL, in_cond_wait, NULL);
	pthread_create(&t[2], NULL, in_mutex_lock, NULL);
	printf("ready\n");
	fflush(stdout);
	pthread_join(t[0], NULL);
	return 0;
}
