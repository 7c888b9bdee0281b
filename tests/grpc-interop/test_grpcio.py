"""The `user` example called over gRPC by Python's grpcio: stubs compiled from the server's
`.proto` export, dynamic calls from reflection alone, the health check, a deadline, a cancel
and error statuses."""

import grpc
import pytest
from google.protobuf import descriptor_pool, message_factory
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)


def test_compiled_stubs_call_unary_methods(channel, stubs):
    users_pb2, users_pb2_grpc = stubs
    service = users_pb2_grpc.UserServiceStub(channel)
    fanly = users_pb2.UserModel(user_id=1, name="fanly", age=18)
    echoed = service.get_user(users_pb2.UserService_get_user_Args(user=fanly)).value
    assert echoed == fanly
    assert service.get_user_id(users_pb2.UserService_get_user_id_Args(name="fanly")).value > 0
    dictionary = service.get_dictionary(users_pb2.UserService_get_dictionary_Args()).value
    assert len(dictionary) > 0
    # An application error travels in the reply, as the export describes it.
    missing = service.find(users_pb2.UserService_find_Args(user_id=99))
    assert missing.HasField("err") and not missing.HasField("ok")


def test_a_server_stream_reads_fifty_users(channel, stubs):
    users_pb2, users_pb2_grpc = stubs
    feed = users_pb2_grpc.UserFeedStub(channel)
    users = [item.value for item in feed.list_users(users_pb2.UserFeed_list_users_Args(count=50))]
    assert [user.user_id for user in users] == list(range(1, 51))
    assert users[0].name == "user1"


def test_a_deadline_and_a_cancel_end_a_stream(channel, stubs):
    users_pb2, users_pb2_grpc = stubs
    feed = users_pb2_grpc.UserFeedStub(channel)
    endless = users_pb2.UserFeed_list_users_Args(count=2_000_000_000)
    with pytest.raises(grpc.RpcError) as ended:
        for _ in feed.list_users(endless, timeout=0.2):
            pass
    assert ended.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED

    call = feed.list_users(endless)
    assert [next(call).value.user_id for _ in range(3)] == [1, 2, 3]
    call.cancel()
    assert call.code() == grpc.StatusCode.CANCELLED
    # The connection and the server carry on.
    service = users_pb2_grpc.UserServiceStub(channel)
    assert service.get_user_id(users_pb2.UserService_get_user_id_Args(name="x")).value >= 0


def test_an_unknown_method_is_unimplemented(channel):
    call = channel.unary_unary("/wirecall.services.UserService/nope")
    with pytest.raises(grpc.RpcError) as failed:
        call(b"")
    assert failed.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_the_health_check_says_serving(channel):
    health = health_pb2_grpc.HealthStub(channel)
    for service in ["", "wirecall.services.UserService", "wirecall.services.UserFeed"]:
        reply = health.Check(health_pb2.HealthCheckRequest(service=service))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING, service
    with pytest.raises(grpc.RpcError) as unknown:
        health.Check(health_pb2.HealthCheckRequest(service="Nobody"))
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND


def test_reflection_alone_is_enough_to_call(channel):
    database = ProtoReflectionDescriptorDatabase(channel)
    services = set(database.get_services())
    assert {"wirecall.services.UserService", "wirecall.services.UserFeed"} <= services
    assert "grpc.health.v1.Health" in services
    pool = descriptor_pool.DescriptorPool(database)
    method = pool.FindServiceByName("wirecall.services.UserService").FindMethodByName("get_user_id")
    args_class = message_factory.GetMessageClass(method.input_type)
    reply_class = message_factory.GetMessageClass(method.output_type)
    call = channel.unary_unary(
        "/wirecall.services.UserService/get_user_id",
        request_serializer=args_class.SerializeToString,
        response_deserializer=reply_class.FromString,
    )
    assert call(args_class(name="fanly")).value > 0
